//! Debug annotations → IR arguments, and tracex's typed metadata back to IR values.

use tracex_ir::defs::set_arg;
use tracex_ir::{Args, Defs, Value};

use super::sequence::Sequence;
use crate::pb::debug_annotation::{nested_value::NestedType, NameField, NestedValue, Value as V};
use crate::pb::tracex::{arg, Arg};
use crate::pb::DebugAnnotation;

/// What could not be carried over from an annotation.
#[derive(Default)]
pub struct Lost {
    /// Annotations holding an embedded proto message (no schema to decode it).
    pub protos: u64,
    /// Interned names or strings that were never defined.
    pub missing_iids: u64,
}

fn json_number(f: f64) -> serde_json::Value {
    serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// A nested annotation (dictionary entries or array values) as JSON.
fn to_json(a: &DebugAnnotation, seq: &Sequence, defs: &Defs, lost: &mut Lost) -> serde_json::Value {
    use serde_json::Value as J;
    if !a.dict_entries.is_empty() {
        let mut m = serde_json::Map::new();
        for e in &a.dict_entries {
            m.insert(key(e, seq, defs, lost), to_json(e, seq, defs, lost));
        }
        return J::Object(m);
    }
    if !a.array_values.is_empty() {
        return J::Array(
            a.array_values
                .iter()
                .map(|e| to_json(e, seq, defs, lost))
                .collect(),
        );
    }
    match &a.value {
        Some(V::BoolValue(b)) => J::Bool(*b),
        Some(V::UintValue(u)) => J::from(*u),
        Some(V::IntValue(i)) => J::from(*i),
        Some(V::DoubleValue(f)) => json_number(*f),
        Some(V::PointerValue(p)) => J::String(format!("0x{p:x}")),
        Some(V::StringValue(s)) => J::String(s.clone()),
        Some(V::StringValueIid(i)) => match seq.strings.get(i) {
            Some(s) => J::String(s.clone()),
            None => {
                lost.missing_iids += 1;
                J::Null
            }
        },
        Some(V::LegacyJsonValue(j)) => {
            serde_json::from_str(j).unwrap_or_else(|_| J::String(j.clone()))
        }
        Some(V::NestedValue(n)) => nested(n),
        None => {
            if a.proto_value.is_some() {
                lost.protos += 1;
            }
            J::Null
        }
    }
}

fn nested(n: &NestedValue) -> serde_json::Value {
    use serde_json::Value as J;
    match n.nested_type.and_then(|t| NestedType::try_from(t).ok()) {
        Some(NestedType::Dict) => J::Object(
            n.dict_keys
                .iter()
                .cloned()
                .zip(n.dict_values.iter().map(nested))
                .collect(),
        ),
        Some(NestedType::Array) => J::Array(n.array_values.iter().map(nested).collect()),
        _ => {
            if let Some(i) = n.int_value {
                J::from(i)
            } else if let Some(f) = n.double_value {
                json_number(f)
            } else if let Some(b) = n.bool_value {
                J::Bool(b)
            } else if let Some(s) = &n.string_value {
                J::String(s.clone())
            } else {
                J::Null
            }
        }
    }
}

fn key(a: &DebugAnnotation, seq: &Sequence, defs: &Defs, lost: &mut Lost) -> String {
    match &a.name_field {
        Some(NameField::Name(n)) => n.clone(),
        Some(NameField::NameIid(i)) => match seq.keys.get(i) {
            Some(&k) => defs.str(k).to_owned(),
            None => {
                lost.missing_iids += 1;
                format!("unknown({i})")
            }
        },
        None => String::new(),
    }
}

/// Adds the annotations of an event to `args` (a later key replaces an earlier one, as when a
/// slice's END repeats an argument of its BEGIN).
pub fn annotations(
    defs: &mut Defs,
    seq: &Sequence,
    list: &[DebugAnnotation],
    args: &mut Args,
    lost: &mut Lost,
) {
    for a in list {
        let k = key(a, seq, defs, lost);
        let value = if !a.dict_entries.is_empty() || !a.array_values.is_empty() {
            Value::Json(to_json(a, seq, defs, lost).to_string().into())
        } else {
            match &a.value {
                Some(V::BoolValue(b)) => Value::Bool(*b),
                Some(V::UintValue(u)) => Value::UInt(*u),
                Some(V::IntValue(i)) => Value::Int(*i),
                Some(V::DoubleValue(f)) => Value::Float(*f),
                Some(V::PointerValue(p)) => Value::str(format!("0x{p:x}")),
                Some(V::StringValue(s)) => Value::str(s.as_str()),
                Some(V::StringValueIid(i)) => match seq.strings.get(i) {
                    Some(s) => Value::str(s.as_str()),
                    None => {
                        lost.missing_iids += 1;
                        Value::Null
                    }
                },
                Some(V::LegacyJsonValue(j)) if j.trim() == "null" => Value::Null,
                Some(V::LegacyJsonValue(j)) => Value::Json(j.as_str().into()),
                Some(V::NestedValue(n)) => Value::Json(nested(n).to_string().into()),
                None => {
                    if a.proto_value.is_some() {
                        lost.protos += 1;
                        continue;
                    }
                    Value::Null
                }
            }
        };
        let k = defs.intern(&k);
        set_arg(args, k, value);
    }
}

/// An IR value as JSON (metadata records gathered into one object).
pub fn to_json_value(defs: &Defs, v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => J::from(*i),
        Value::UInt(u) => J::from(*u),
        Value::Float(f) => json_number(*f),
        Value::Str(s) => J::String(s.to_string()),
        Value::Sym(s) => J::String(defs.str(*s).to_owned()),
        Value::Json(_) | Value::JsonSym(_) => {
            let j = v.json(defs).unwrap_or_default();
            serde_json::from_str(j).unwrap_or_else(|_| J::String(j.to_string()))
        }
    }
}

/// tracex's typed metadata as IR arguments.
pub fn typed_args(defs: &mut Defs, list: &[Arg]) -> Args {
    let mut out = Args::new();
    for a in list {
        let v = match &a.value {
            Some(arg::Value::NullValue(_)) | None => Value::Null,
            Some(arg::Value::BoolValue(b)) => Value::Bool(*b),
            Some(arg::Value::IntValue(i)) => Value::Int(*i),
            Some(arg::Value::UintValue(u)) => Value::UInt(*u),
            Some(arg::Value::DoubleValue(f)) => Value::Float(*f),
            Some(arg::Value::StringValue(s)) => Value::str(s.as_str()),
            Some(arg::Value::JsonValue(j)) => Value::Json(j.as_str().into()),
        };
        // as written, repeated keys too (metadata records may repeat one)
        let key = defs.intern(a.key.as_deref().unwrap_or_default());
        out.push(tracex_ir::Arg { key, value: v });
    }
    out
}
