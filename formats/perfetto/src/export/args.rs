//! Event arguments as debug annotations, and typed metadata values as tracex `Arg`s.

use tracex_ir::{Args, Defs, Value};

use super::intern::Interner;
use crate::pb::debug_annotation::{NameField, Value as DaValue};
use crate::pb::tracex::{arg, Arg};
use crate::pb::DebugAnnotation;

/// Each argument as a debug annotation with an interned name. JSON values (objects, arrays,
/// out-of-range numbers) keep their exact text as `legacy_json_value`, which Perfetto expands
/// into nested arguments; a null is the JSON text `null`.
pub fn annotations(defs: &Defs, interner: &mut Interner, args: &Args) -> Vec<DebugAnnotation> {
    args.iter()
        .map(|a| DebugAnnotation {
            name_field: Some(NameField::NameIid(interner.key(defs, a.key))),
            value: Some(match &a.value {
                Value::Null => DaValue::LegacyJsonValue("null".into()),
                Value::Bool(b) => DaValue::BoolValue(*b),
                Value::Int(i) => DaValue::IntValue(*i),
                Value::UInt(u) => DaValue::UintValue(*u),
                Value::Float(f) => DaValue::DoubleValue(*f),
                Value::Str(s) => DaValue::StringValue(s.to_string()),
                Value::Json(j) => DaValue::LegacyJsonValue(j.to_string()),
            }),
            ..Default::default()
        })
        .collect()
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
                Value::Json(j) => arg::Value::JsonValue(j.to_string()),
            }),
        })
        .collect()
}

/// A metadata value as a trace attribute (Perfetto keeps only integers and strings there).
pub fn attribute_value(v: &Value) -> crate::pb::trace_attributes::attribute::Value {
    use crate::pb::trace_attributes::attribute::Value as A;
    match v {
        Value::Int(i) => A::LongValue(*i),
        Value::UInt(u) if *u <= i64::MAX as u64 => A::LongValue(*u as i64),
        Value::Bool(b) => A::StringValue(b.to_string()),
        Value::Null => A::StringValue("null".into()),
        Value::UInt(u) => A::StringValue(u.to_string()),
        Value::Float(f) => A::StringValue(ryu_like(*f)),
        Value::Str(s) => A::StringValue(s.to_string()),
        Value::Json(j) => A::StringValue(j.to_string()),
    }
}

fn ryu_like(f: f64) -> String {
    if f.is_finite() {
        serde_json::Number::from_f64(f).map_or_else(|| f.to_string(), |n| n.to_string())
    } else {
        f.to_string()
    }
}
