//! One trace event as it appears in the file: every known field borrowed from the input where
//! possible, numbers and ids kept as their raw JSON text for exact parsing later.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

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

#[derive(Default, Debug)]
pub struct RawEvent<'a> {
    pub ph: Option<Text<'a>>,
    pub name: Option<Text<'a>>,
    pub cat: Option<Text<'a>>,
    pub ts: Option<&'a RawValue>,
    pub dur: Option<&'a RawValue>,
    pub tts: Option<&'a RawValue>,
    pub tdur: Option<&'a RawValue>,
    pub pid: Option<&'a RawValue>,
    pub tid: Option<&'a RawValue>,
    pub id: Option<&'a RawValue>,
    pub id2: Option<&'a RawValue>,
    pub scope: Option<Text<'a>>,
    pub s: Option<Text<'a>>,
    pub bp: Option<Text<'a>>,
    pub bind_id: Option<&'a RawValue>,
    pub flow_in: Option<&'a RawValue>,
    pub flow_out: Option<&'a RawValue>,
    pub sf: Option<&'a RawValue>,
    pub stack: Option<&'a RawValue>,
    pub esf: Option<&'a RawValue>,
    pub estack: Option<&'a RawValue>,
    pub cname: Option<Text<'a>>,
    pub args: Option<&'a RawValue>,
    /// Number of fields present (0 for `{}`).
    pub fields: u32,
    /// Fields tracex does not know, counted and dropped.
    pub unknown: u32,
    pub first_unknown: Option<String>,
}

/// `null` counts as absent.
fn raw_opt(v: &RawValue) -> Option<&RawValue> {
    if v.get() == "null" {
        None
    } else {
        Some(v)
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

/// Parses one event object.
pub fn parse_event(bytes: &[u8]) -> Result<RawEvent<'_>, serde_json::Error> {
    serde_json::from_slice(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrows_and_keeps_raw_numbers() {
        let e = parse_event(br#"{"ph":"X","name":"a\"b","ts":1.5,"pid":"Spans","args":{"x":[1]},"zz":3,"dur":null}"#).unwrap();
        assert_eq!(e.ph.unwrap().as_str(), "X");
        assert_eq!(e.name.unwrap().as_str(), "a\"b");
        assert_eq!(e.ts.unwrap().get(), "1.5");
        assert_eq!(e.pid.unwrap().get(), "\"Spans\"");
        assert_eq!(e.args.unwrap().get(), r#"{"x":[1]}"#);
        assert!(e.dur.is_none());
        assert_eq!((e.unknown, e.first_unknown.as_deref()), (1, Some("zz")));
        assert_eq!(e.fields, 7);
        assert!(parse_event(b"{}").unwrap().fields == 0);
        assert!(parse_event(b"[1]").is_err());
    }
}
