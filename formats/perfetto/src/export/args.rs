//! Event arguments as debug annotations, and typed metadata values as tracex `Arg`s.

use tracex_ir::{Args, Defs, Value};

use super::event::{Annotations, Scalar};
use super::intern::Interner;
use crate::pb::debug_annotation::{NameField, Value as DaValue};
use crate::pb::tracex::{arg, Arg};
use crate::pb::DebugAnnotation;
use prost::Message;

/// Each argument as a debug annotation with an interned name, encoded (see [`Annotations`]);
/// string values interned too. JSON values (objects, arrays, out-of-range numbers) become
/// nested annotations when that is exact and smaller, else keep their exact text as
/// `legacy_json_value` (Perfetto expands both into nested arguments); a null is the JSON text
/// `null`.
pub fn annotations(defs: &Defs, interner: &mut Interner, args: &Args) -> Vec<u8> {
    if args.is_empty() {
        return Vec::new();
    }
    let mut out = Annotations::with_capacity(args.len());
    for a in args.iter() {
        let name = interner.key(defs, a.key);
        let value = match &a.value {
            Value::Null => Scalar::Json("null"),
            Value::Bool(b) => Scalar::Bool(*b),
            Value::Int(i) => Scalar::Int(*i),
            Value::UInt(u) => Scalar::UInt(*u),
            Value::Float(f) => Scalar::Double(*f),
            Value::Str(s) => match interner.value(s) {
                Some(iid) => Scalar::StrIid(iid),
                None => Scalar::Str(s),
            },
            Value::Sym(s) => match interner.value_sym(defs, *s) {
                Some(iid) => Scalar::StrIid(iid),
                None => Scalar::Str(defs.str(*s)),
            },
            Value::Json(j) => {
                interner.json(j, json, |body| out.encoded(name, body));
                continue;
            }
            Value::JsonSym(j) => {
                interner.json_sym(defs, *j, json, |body| out.encoded(name, body));
                continue;
            }
        };
        out.scalar(name, value);
    }
    out.buf
}

fn string(interner: &mut Interner, s: &str) -> DaValue {
    match interner.value(s) {
        Some(iid) => DaValue::StringValueIid(iid),
        None => DaValue::StringValue(s.to_owned()),
    }
}

/// A JSON argument, encoded without its name: nested annotations if they give back exactly
/// this text (compact, keys in order, no empty object or array, which nested annotations cannot
/// tell from a null) and are smaller, else the text.
pub fn json(interner: &mut Interner, text: &str) -> Vec<u8> {
    let legacy = DebugAnnotation {
        value: Some(DaValue::LegacyJsonValue(text.to_owned())),
        ..Default::default()
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return legacy.encode_to_vec();
    };
    if !matches!(
        v,
        serde_json::Value::Array(_) | serde_json::Value::Object(_)
    ) || !nestable(&v)
        || serde_json::to_string(&v).ok().as_deref() != Some(text)
    {
        return legacy.encode_to_vec();
    }
    let native = nested(interner, &v);
    if native.encoded_len() < legacy.encoded_len() {
        native.encode_to_vec()
    } else {
        legacy.encode_to_vec()
    }
}

fn nestable(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Array(a) => !a.is_empty() && a.iter().all(nestable),
        serde_json::Value::Object(m) => !m.is_empty() && m.values().all(nestable),
        serde_json::Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(f64::is_finite)
        }
        _ => true,
    }
}

fn nested(interner: &mut Interner, v: &serde_json::Value) -> DebugAnnotation {
    use serde_json::Value as J;
    let mut a = DebugAnnotation::default();
    match v {
        J::Null => {}
        J::Bool(b) => a.value = Some(DaValue::BoolValue(*b)),
        J::Number(n) => {
            a.value = Some(match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => DaValue::IntValue(i),
                (None, Some(u)) => DaValue::UintValue(u),
                _ => DaValue::DoubleValue(n.as_f64().unwrap_or(0.0)),
            })
        }
        J::String(s) => a.value = Some(string(interner, s)),
        J::Array(items) => a.array_values = items.iter().map(|i| nested(interner, i)).collect(),
        J::Object(m) => {
            a.dict_entries = m
                .iter()
                .map(|(k, v)| DebugAnnotation {
                    name_field: Some(NameField::NameIid(interner.key_text(k))),
                    ..nested(interner, v)
                })
                .collect()
        }
    }
    a
}

/// Metadata (trace, process, thread) as typed tracex arguments.
pub fn typed(defs: &Defs, args: &Args) -> Vec<Arg> {
    args.iter()
        .map(|a| Arg {
            key: Some(defs.str(a.key).to_owned()),
            value: Some(match &a.value {
                Value::Null => arg::Value::NullValue(true),
                Value::Bool(b) => arg::Value::BoolValue(*b),
                Value::Int(i) => arg::Value::IntValue(*i),
                Value::UInt(u) => arg::Value::UintValue(*u),
                Value::Float(f) => arg::Value::DoubleValue(*f),
                Value::Str(s) => arg::Value::StringValue(s.to_string()),
                Value::Sym(s) => arg::Value::StringValue(defs.str(*s).to_owned()),
                Value::Json(j) => arg::Value::JsonValue(j.to_string()),
                Value::JsonSym(j) => arg::Value::JsonValue(defs.str(*j).to_owned()),
            }),
        })
        .collect()
}

/// A metadata value as a trace attribute (Perfetto keeps only integers and strings there).
pub fn attribute_value(defs: &Defs, v: &Value) -> crate::pb::trace_attributes::attribute::Value {
    use crate::pb::trace_attributes::attribute::Value as A;
    match v {
        Value::Int(i) => A::LongValue(*i),
        Value::UInt(u) if *u <= i64::MAX as u64 => A::LongValue(*u as i64),
        Value::Bool(b) => A::StringValue(b.to_string()),
        Value::Null => A::StringValue("null".into()),
        Value::UInt(u) => A::StringValue(u.to_string()),
        Value::Float(f) => A::StringValue(ryu_like(*f)),
        Value::Str(s) => A::StringValue(s.to_string()),
        Value::Sym(s) => A::StringValue(defs.str(*s).to_owned()),
        Value::Json(j) => A::StringValue(j.to_string()),
        Value::JsonSym(j) => A::StringValue(defs.str(*j).to_owned()),
    }
}

fn ryu_like(f: f64) -> String {
    if f.is_finite() {
        serde_json::Number::from_f64(f).map_or_else(|| f.to_string(), |n| n.to_string())
    } else {
        f.to_string()
    }
}
