//! Event arguments: JSON objects become IR [`Args`]; nested objects and arrays are kept as their
//! exact JSON text.

use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use tracex_ir::{Args, Defs, Num, Value};

use super::raw::{Members, Raw, Text};

struct Pairs<'a>(Vec<(Text<'a>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Pairs<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Pairs<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut v = Vec::new();
                while let Some((k, raw)) = m.next_entry::<Text<'de>, &'de RawValue>()? {
                    v.push((k, raw));
                }
                Ok(Pairs(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// The key/value pairs of a JSON object, values as raw text; `None` if `text` is not an object.
/// By the importer's fast path where it can, else by serde.
pub fn raw_object(text: &str) -> Option<Vec<(Text<'_>, Raw<'_>)>> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    super::fast::object_pairs(text).or_else(|| serde_raw_object(text))
}

fn serde_raw_object(text: &str) -> Option<Vec<(Text<'_>, Raw<'_>)>> {
    let pairs = serde_json::from_str::<Pairs>(text).ok()?.0;
    Some(pairs.into_iter().map(|(k, v)| (k, v.into())).collect())
}

/// A JSON value as an IR value: scalars typed, objects and arrays kept as text.
pub fn value_of(raw: &str) -> Value {
    match raw.as_bytes().first() {
        Some(b'"') => match plain_string(raw) {
            Some(s) => Value::str(s),
            None => match serde_json::from_str::<Text>(raw) {
                Ok(t) => Value::Str(t.0.into()),
                Err(_) => Value::Json(raw.into()),
            },
        },
        Some(b'{') | Some(b'[') => Value::Json(raw.into()),
        Some(b't') => Value::Bool(true),
        Some(b'f') => Value::Bool(false),
        Some(b'n') => Value::Null,
        _ => number(raw).unwrap_or_else(|| Value::Json(raw.into())),
    }
}

/// The contents of a JSON string without escapes (what serde would read, without its work).
fn plain_string(raw: &str) -> Option<&str> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20)).then_some(inner)
}

/// A JSON number as the narrowest exact IR value: `i64`, then `u64`, then a finite `f64`.
fn number(raw: &str) -> Option<Value> {
    if !raw.contains(['.', 'e', 'E']) {
        if let Ok(i) = raw.parse::<i64>() {
            return Some(Value::Int(i));
        }
        if let Ok(u) = raw.parse::<u64>() {
            return Some(Value::UInt(u));
        }
        return None;
    }
    raw.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(Value::Float)
}

/// Parses an `args` object, from its `members` where the fast path read them, keeping the
/// members whose key `keep` says; `None` if it is not an object.
pub fn parse_args(
    defs: &mut Defs,
    raw: Raw<'_>,
    members: Members<'_>,
    keep: impl Fn(&str) -> bool,
) -> Option<Args> {
    let mut add = |args: &mut Args, key: &str, value: &str| {
        if keep(key) {
            let key = defs.intern(key);
            tracex_ir::defs::set_arg(args, key, value_of(value));
        }
    };
    if let Some(members) = members.0 {
        let mut args = Args::with_capacity(members.len());
        // the members were read from this text, so they lie on it (else it is read again)
        let read = members.iter().all(|m| match m.of(raw.get()) {
            Some((key, value)) => {
                add(&mut args, key, value);
                true
            }
            None => false,
        });
        if read {
            return Some(args);
        }
    }
    let pairs = raw_object(raw.get())?;
    let mut args = Args::with_capacity(pairs.len());
    for (k, v) in pairs {
        add(&mut args, k.as_str(), v.get());
    }
    Some(args)
}

/// A counter series value: a number or a numeric string.
pub fn counter_value(raw: &str) -> Option<Num> {
    let t = match raw.strip_prefix('"') {
        Some(inner) => inner.strip_suffix('"')?.trim(),
        None => raw,
    };
    if let Ok(i) = t.parse::<i64>() {
        return Some(Num::Int(i));
    }
    t.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(Num::Float)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(value_of("12"), Value::Int(12));
        assert_eq!(value_of("-12"), Value::Int(-12));
        assert_eq!(value_of("18446744073709551615"), Value::UInt(u64::MAX));
        assert_eq!(value_of("1.5"), Value::Float(1.5));
        assert_eq!(value_of("1e999"), Value::Json("1e999".into()));
        assert_eq!(value_of("\"a\\u00e9\""), Value::str("aé"));
        assert_eq!(value_of("[1, 2]"), Value::Json("[1, 2]".into()));
        assert_eq!(value_of("null"), Value::Null);
        assert_eq!(value_of("\"a b\""), Value::str("a b"));
        assert_eq!(value_of("\"a"), Value::Json("\"a".into()));
        assert_eq!(value_of("\"a\"b\""), Value::Json("\"a\"b\"".into()));
        assert_eq!(counter_value("\"3.5\""), Some(Num::Float(3.5)));
        assert_eq!(counter_value("7"), Some(Num::Int(7)));
        assert_eq!(counter_value("\"x\""), None);
    }

    #[test]
    fn fast_pairs_are_serde_pairs() {
        for text in [
            r#"{}"#,
            r#" { "a" : 1 , "b":{"c":[2, "x\"y"]},"a":"z", "é":null } "#,
            r#"{"a":true,"b":false,"c":-1.5e3,"d":[]}"#,
        ] {
            let fast = super::super::fast::object_pairs(text).expect("fast path");
            assert_eq!(Some(fast), serde_raw_object(text), "{text}");
        }
        for text in [
            r#"{"\u0061":1}"#,
            r#"{"a":1,}"#,
            r#"{"a":01}"#,
            r#"{"a":1} x"#,
        ] {
            assert_eq!(super::super::fast::object_pairs(text), None, "{text}");
            assert_eq!(raw_object(text), serde_raw_object(text), "{text}");
        }
    }

    #[test]
    fn duplicate_keys_keep_the_last() {
        let mut d = Defs::new();
        let raw: &RawValue = serde_json::from_str(r#"{"a":1,"b":{"c":2},"a":3}"#).unwrap();
        let a = parse_args(&mut d, raw.into(), Members(None), |_| true).unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].value, Value::Int(3));
        assert_eq!(a[1].value, Value::Json(r#"{"c":2}"#.into()));
    }
}
