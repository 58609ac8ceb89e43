//! JSON text of values, arguments and ids, appended to a byte buffer.

use tracex_ir::{Args, Defs, Diagnostics, Location, StrId, TrackId, TrackKind, Value};

use crate::diag as d;

/// The JSON literals of interned strings, each escaped once: names, categories and argument
/// keys repeat on every event, and scanning them for characters to escape each time was a
/// tenth of the Chrome writer's time.
#[derive(Default)]
pub struct Literals(Vec<Option<Box<[u8]>>>);

impl Literals {
    /// Appends string `id` of `defs` as a JSON string literal.
    pub fn push(&mut self, out: &mut Vec<u8>, defs: &Defs, id: StrId) {
        let i = id.0 as usize;
        if i >= self.0.len() {
            self.0.resize(i + 1, None);
        }
        let lit = self.0[i].get_or_insert_with(|| {
            let mut v = Vec::new();
            push_str(&mut v, defs.str(id));
            v.into_boxed_slice()
        });
        out.extend_from_slice(lit);
    }
}

/// A string to write: an interned one (its literal cached) or other text.
#[derive(Clone, Copy)]
pub enum Text<'a> {
    Id(StrId),
    Str(&'a str),
}

impl<'a> Text<'a> {
    pub fn id_or(id: Option<StrId>, text: &'a str) -> Text<'a> {
        id.map_or(Text::Str(text), Text::Id)
    }

    pub fn push(self, out: &mut Vec<u8>, lits: &mut Literals, defs: &Defs) {
        match self {
            Text::Id(id) => lits.push(out, defs, id),
            Text::Str(s) => push_str(out, s),
        }
    }

    /// The text itself.
    pub fn str(self, defs: &'a Defs) -> &'a str {
        match self {
            Text::Id(id) => defs.str(id),
            Text::Str(s) => s,
        }
    }
}

/// Appends `s` as a JSON string literal.
pub fn push_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let b = s.as_bytes();
    // Most names need no escaping: check all bytes without branching, then copy at once.
    if !b.iter().fold(false, |any, &c| {
        any | (c < 0x20) | (c == b'"') | (c == b'\\')
    }) {
        out.extend_from_slice(b);
        out.push(b'"');
        return;
    }
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                out.extend_from_slice(&b[start..i]);
                out.extend_from_slice(format!("\\u{:04x}", c).as_bytes());
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&b[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

/// Appends an integer.
pub fn push_int(out: &mut Vec<u8>, v: impl tracex_ir::decimal::Decimal) {
    tracex_ir::decimal::push(out, v);
}

/// Appends a value; false when it could not be written as is (NaN or ∞ became `null`).
pub fn write_value(out: &mut Vec<u8>, defs: &Defs, v: &Value) -> bool {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Int(i) => push_int(out, *i),
        Value::UInt(u) => push_int(out, *u),
        Value::Float(f) if f.is_finite() => {
            out.extend_from_slice(ryu::Buffer::new().format_finite(*f).as_bytes())
        }
        Value::Float(_) => {
            out.extend_from_slice(b"null");
            return false;
        }
        Value::Str(s) => push_str(out, s),
        Value::Sym(s) => push_str(out, defs.str(*s)),
        Value::Json(j) => out.extend_from_slice(j.as_bytes()),
        Value::JsonSym(j) => out.extend_from_slice(defs.str(*j).as_bytes()),
    }
    true
}

/// Appends `{"key":value,...}` of `args` and then `extra`; counts values that cannot be
/// written.
pub fn write_args(
    (out, lits): (&mut Vec<u8>, &mut Literals),
    defs: &Defs,
    diag: &mut Diagnostics,
    args: &Args,
    extra: &[(&str, Value)],
) {
    out.push(b'{');
    let mut bad = 0;
    let all = args
        .iter()
        .map(|a| (Text::Id(a.key), &a.value))
        .chain(extra.iter().map(|(k, v)| (Text::Str(k), v)));
    for (i, (key, value)) in all.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        key.push(out, lits, defs);
        out.push(b':');
        match value {
            Value::Sym(s) => lits.push(out, defs, *s),
            v => bad += u64::from(!write_value(out, defs, v)),
        }
    }
    out.push(b'}');
    diag.record_n(
        &d::EXPORT_NON_FINITE,
        bad,
        Location::Nowhere,
        None::<String>,
    );
}

/// Args of a metadata record: JSON objects as they are, other values wrapped as `{"value": v}`.
pub fn meta_args(defs: &Defs, v: &Value) -> Vec<u8> {
    match v.json(defs) {
        Some(j) if j.trim_start().starts_with('{') => j.as_bytes().to_vec(),
        _ => {
            let mut a = b"{\"value\":".to_vec();
            write_value(&mut a, defs, v);
            a.push(b'}');
            a
        }
    }
}

/// The `"id2"` (or `"id"`, `"scope"`) fields of an async track, from its label; labels written by
/// the Chrome importer round-trip exactly, others become a local string id.
pub fn async_id(defs: &Defs, track: TrackId) -> Vec<u8> {
    let mut lane = None;
    let mut t = track;
    while let TrackKind::Overflow { of, level } = defs.track(t).kind {
        lane.get_or_insert(level);
        t = of;
    }
    let label = match defs.track(t).label {
        Some(l) => defs.str(l).to_owned(),
        None => format!("\"{}\"", t.0),
    };
    let mut out = Vec::new();
    let mut rest = label.as_str();
    if let Some(after) = rest.strip_prefix("scope:") {
        // the scope ends at the first ':' not escaped as "\:"
        let mut end = None;
        let b = after.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' {
                i += 2;
                continue;
            }
            if b[i] == b':' {
                end = Some(i);
                break;
            }
            i += 1;
        }
        if let Some(e) = end {
            out.extend_from_slice(b",\"scope\":");
            push_str(&mut out, &after[..e].replace("\\:", ":"));
            rest = &after[e + 1..];
        }
    }
    let valid = |raw: &str| {
        serde_json::from_str::<serde_json::Value>(raw)
            .map(|v| v.is_string() || v.is_number())
            .unwrap_or(false)
    };
    let (field, raw) = if let Some(r) = rest.strip_prefix("local:") {
        ("local", r)
    } else if let Some(r) = rest.strip_prefix("global:") {
        ("global", r)
    } else {
        ("id", rest)
    };
    let raw_owned;
    let raw = match lane {
        Some(level) => {
            let base = serde_json::from_str::<serde_json::Value>(raw)
                .ok()
                .map(|v| match v {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                })
                .unwrap_or_else(|| raw.to_string());
            raw_owned = serde_json::to_string(&format!("{base}#lane{level}")).expect("string");
            raw_owned.as_str()
        }
        None if valid(raw) => match viewer_safe_int(raw) {
            Some(safe) => {
                raw_owned = safe;
                raw_owned.as_str()
            }
            None => raw,
        },
        None => {
            raw_owned = serde_json::to_string(raw).expect("string");
            raw_owned.as_str()
        }
    };
    match field {
        "id" => {
            out.extend_from_slice(b",\"id\":");
            out.extend_from_slice(raw.as_bytes());
        }
        f => {
            out.extend_from_slice(b",\"id2\":{\"");
            out.extend_from_slice(f.as_bytes());
            out.extend_from_slice(b"\":");
            out.extend_from_slice(raw.as_bytes());
            out.push(b'}');
        }
    }
    out
}

/// The largest integer a JavaScript number (catapult) holds exactly: larger ids are written as
/// `0x` hex strings, which catapult compares as text and Perfetto parses as hex.
pub const MAX_SAFE_ID: u64 = (1 << 53) - 1;

/// Appends an id as a number where viewers read it exactly, else as its `0x` hex string.
pub fn push_id(out: &mut Vec<u8>, id: u64) {
    if id <= MAX_SAFE_ID {
        push_int(out, id);
    } else {
        push_str(out, &format!("0x{id:x}"));
    }
}

/// The id a viewer reads exactly in place of an integer id it would not: catapult holds ids as
/// doubles (exact to 2^53) and Perfetto's JSON parser rejects an integer `id` beyond `i64`
/// (rocprofv3's async track uuids are such). One in `u64` becomes the `0x` hex string both read
/// as that number and tracex's importer reads back as the integer; one beyond `u64` and `i64`,
/// its decimal text as a string. A negative `i64` stays: Perfetto reads it exactly. `None`: keep
/// `raw` as it is.
pub fn viewer_safe_int(raw: &str) -> Option<String> {
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None; // a string, a float or an exponent: not an integer literal
    }
    if let Ok(n) = raw.parse::<u64>() {
        if n <= MAX_SAFE_ID {
            return None;
        }
        let mut out = Vec::new();
        push_id(&mut out, n);
        return Some(String::from_utf8(out).expect("ascii"));
    }
    match raw.parse::<i64>() {
        Ok(_) => None,
        Err(_) => Some(serde_json::to_string(raw).expect("string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Integer ids a double holds exactly stay numbers; larger ones become strings viewers read.
    #[test]
    fn ids_beyond_2_53_become_strings() {
        assert_eq!(viewer_safe_int("9007199254740991"), None);
        assert_eq!(viewer_safe_int("-9007199254740991"), None);
        assert_eq!(viewer_safe_int("0"), None);
        assert_eq!(
            viewer_safe_int("9007199254740992").as_deref(),
            Some("\"0x20000000000000\"")
        );
        assert_eq!(
            viewer_safe_int("10771294206341709049").as_deref(),
            Some("\"0x957b53030c387cf9\"")
        );
        assert_eq!(viewer_safe_int("-9007199254740993"), None);
        assert_eq!(
            viewer_safe_int("-9223372036854775809").as_deref(),
            Some("\"-9223372036854775809\"")
        );
        assert_eq!(
            viewer_safe_int("18446744073709551616").as_deref(),
            Some("\"18446744073709551616\"")
        );
        for kept in ["\"12\"", "1.5", "1e30", "-", "true"] {
            assert_eq!(viewer_safe_int(kept), None, "{kept}");
        }
    }

    #[test]
    fn escapes() {
        let mut v = Vec::new();
        push_str(&mut v, "a\"b\\c\nd\u{1}é");
        assert_eq!(String::from_utf8(v).unwrap(), "\"a\\\"b\\\\c\\nd\\u0001é\"");
    }

    /// An interned string value is written as its text, escaped, like an owned one.
    #[test]
    fn interned_values_are_written_as_their_text() {
        let mut defs = Defs::default();
        let key = defs.intern("k");
        let text = "sm_90 \"x\"";
        let args = |value| vec![tracex_ir::Arg { key, value }];
        let sym = args(Value::Sym(defs.intern(text)));
        let mut diag = Diagnostics::default();
        let (mut a, mut b, mut lits) = (Vec::new(), Vec::new(), Literals::default());
        write_args((&mut a, &mut lits), &defs, &mut diag, &sym, &[]);
        write_args(
            (&mut b, &mut lits),
            &defs,
            &mut diag,
            &args(Value::str(text)),
            &[],
        );
        assert_eq!(a, b);
        assert_eq!(a, br#"{"k":"sm_90 \"x\""}"#);

        let (mut a, mut b) = (Vec::new(), Vec::new());
        let json = args(Value::JsonSym(defs.intern("[1,2,3]")));
        write_args((&mut a, &mut lits), &defs, &mut diag, &json, &[]);
        write_args(
            (&mut b, &mut lits),
            &defs,
            &mut diag,
            &args(Value::Json("[1,2,3]".into())),
            &[],
        );
        assert_eq!(a, b);
        assert_eq!(a, br#"{"k":[1,2,3]}"#);
    }
}
