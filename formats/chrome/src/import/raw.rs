//! One trace event as it appears in the file: every known field borrowed from the input where
//! possible, numbers and ids kept as their raw JSON text for exact parsing later.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use tracex_ir::time::Decimal;

/// A JSON string, borrowed unless it contains escapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text<'a>(pub Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

impl Text<'_> {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A JSON value's exact text (a number, an id, an object), borrowed from the input and known to
/// be valid JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raw<'a>(&'a str);

impl<'a> Raw<'a> {
    /// The text; the caller vouches that it is one valid JSON value.
    pub(super) fn new(text: &'a str) -> Self {
        Raw(text)
    }

    pub fn get(&self) -> &'a str {
        self.0
    }
}

impl<'a> From<&'a RawValue> for Raw<'a> {
    fn from(v: &'a RawValue) -> Self {
        Raw(v.get())
    }
}

/// A member of an event's `args` object: where its key's contents and its value's text lie
/// within the object's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    pub key: (u32, u32),
    pub value: (u32, u32),
}

impl Member {
    /// The key's contents and the value's text in `args`, the text the member was read from.
    pub fn of<'a>(&self, args: &'a str) -> Option<(&'a str, &'a str)> {
        let at = |(start, end): (u32, u32)| args.get(start as usize..end as usize);
        Some((at(self.key)?, at(self.value)?))
    }
}

/// The members of an event's `args` object where the fast path read them, so that the
/// importer need not read `args` again. A cache of what `args` says, so it takes no part in
/// comparing events.
#[derive(Default, Debug, Clone, Copy)]
pub struct Members<'a>(pub Option<&'a [Member]>);

impl PartialEq for Members<'_> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// `ts` and `dur` in ns where the fast path read them, on the read-ahead thread. A cache of
/// what parsing them again gives, so it takes no part in comparing events.
#[derive(Default, Debug, Clone, Copy)]
pub struct Times {
    pub ts: Option<Decimal>,
    pub dur: Option<Decimal>,
}

impl PartialEq for Times {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[derive(Default, Debug, PartialEq)]
pub struct RawEvent<'a> {
    pub ph: Option<Text<'a>>,
    pub name: Option<Text<'a>>,
    pub cat: Option<Text<'a>>,
    pub ts: Option<Raw<'a>>,
    pub dur: Option<Raw<'a>>,
    pub tts: Option<Raw<'a>>,
    pub tdur: Option<Raw<'a>>,
    pub pid: Option<Raw<'a>>,
    pub tid: Option<Raw<'a>>,
    pub id: Option<Raw<'a>>,
    pub id2: Option<Raw<'a>>,
    pub scope: Option<Text<'a>>,
    pub s: Option<Text<'a>>,
    pub bp: Option<Text<'a>>,
    pub bind_id: Option<Raw<'a>>,
    pub flow_in: Option<Raw<'a>>,
    pub flow_out: Option<Raw<'a>>,
    pub sf: Option<Raw<'a>>,
    pub stack: Option<Raw<'a>>,
    pub esf: Option<Raw<'a>>,
    pub estack: Option<Raw<'a>>,
    pub cname: Option<Text<'a>>,
    pub args: Option<Raw<'a>>,
    pub members: Members<'a>,
    pub times: Times,
    /// Number of fields present (0 for `{}`).
    pub fields: u32,
    /// Fields tracex does not know, counted and dropped.
    pub unknown: u32,
    pub first_unknown: Option<String>,
}

/// `null` counts as absent.
fn raw_opt(v: &RawValue) -> Option<Raw<'_>> {
    if v.get() == "null" {
        None
    } else {
        Some(v.into())
    }
}

impl<'de> Deserialize<'de> for RawEvent<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawEvent<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a trace event object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut e = RawEvent::default();
                while let Some(key) = m.next_key::<Text<'de>>()? {
                    e.fields += 1;
                    macro_rules! text {
                        ($f:ident) => {
                            e.$f = m.next_value::<Option<Text<'de>>>()?
                        };
                    }
                    macro_rules! raw {
                        ($f:ident) => {
                            e.$f = raw_opt(m.next_value::<&'de RawValue>()?)
                        };
                    }
                    match key.as_str() {
                        "ph" => text!(ph),
                        "name" => text!(name),
                        "cat" => text!(cat),
                        "ts" => raw!(ts),
                        "dur" => raw!(dur),
                        "tts" => raw!(tts),
                        "tdur" => raw!(tdur),
                        "pid" => raw!(pid),
                        "tid" => raw!(tid),
                        "id" => raw!(id),
                        "id2" => raw!(id2),
                        "scope" => text!(scope),
                        "s" => text!(s),
                        "bp" => text!(bp),
                        "bind_id" => raw!(bind_id),
                        "flow_in" => raw!(flow_in),
                        "flow_out" => raw!(flow_out),
                        "sf" => raw!(sf),
                        "stack" => raw!(stack),
                        "esf" => raw!(esf),
                        "estack" => raw!(estack),
                        "cname" => text!(cname),
                        "args" => raw!(args),
                        _ => {
                            m.next_value::<IgnoredAny>()?;
                            e.unknown += 1;
                            if e.first_unknown.is_none() {
                                e.first_unknown = Some(key.as_str().to_owned());
                            }
                        }
                    }
                }
                Ok(e)
            }
        }
        d.deserialize_map(V)
    }
}

/// Parses one event object with serde (any event; the fast path's reference).
pub fn parse_event_serde(bytes: &[u8]) -> Result<RawEvent<'_>, serde_json::Error> {
    serde_json::from_slice(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrows_and_keeps_raw_numbers() {
        let e = parse_event_serde(br#"{"ph":"X","name":"a\"b","ts":1.5,"pid":"Spans","args":{"x":[1]},"zz":3,"dur":null}"#).unwrap();
        assert_eq!(e.ph.unwrap().as_str(), "X");
        assert_eq!(e.name.unwrap().as_str(), "a\"b");
        assert_eq!(e.ts.unwrap().get(), "1.5");
        assert_eq!(e.pid.unwrap().get(), "\"Spans\"");
        assert_eq!(e.args.unwrap().get(), r#"{"x":[1]}"#);
        assert!(e.dur.is_none());
        assert_eq!((e.unknown, e.first_unknown.as_deref()), (1, Some("zz")));
        assert_eq!(e.fields, 7);
        assert!(parse_event_serde(b"{}").unwrap().fields == 0);
        assert!(parse_event_serde(b"[1]").is_err());
    }
}
