//! The shape of one activity record as the injection library's printers write it:
//!
//! ```text
//! KIND [ start, end ] key value, "name", key value, ...
//! MEMCPY "HtoD" [ start, end ] duration 736, size 4096, ...
//! OVERHEAD ACTIVITY_BUFFER_REQUEST [ start, end ] duration 12268258, THREAD, id 2830733312, correlation id 1
//! MEMORY2 [ ts ] memoryOperationType ALLOCATE, memoryKind DEVICE, size 4, ...
//! ```
//!
//! followed by indented continuation lines of more `key value` fields
//! (`\tgrid [ 1, 1, 1 ], block [ 32, 1, 1 ], ...`, `\tdeviceId 0, contextId 1, streamId 7, ...`).

use std::borrow::Cow;

/// A parsed record. Borrowed from the text it was parsed from; its times and fields are its
/// own when [`parse`] made them, or lent by a batch of records read ahead.
#[derive(Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub kind: &'a str,
    /// The word or quoted string between the kind and the bracket (`HtoD`, `ACTIVITY_BUFFER_REQUEST`).
    pub label: Option<&'a str>,
    /// The bracketed times: `[start, end]` or `[ts]`.
    pub times: Cow<'a, [i64]>,
    pub fields: Cow<'a, [Field<'a>]>,
}

/// One `key value` item; a quoted string alone has the key `""`, as does a bare word.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct Field<'a> {
    pub key: &'a str,
    pub value: &'a str,
}

impl<'a> Record<'a> {
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.fields.iter().find(|f| f.key == key).map(|f| f.value)
    }

    pub fn int(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| v.parse().ok())
    }

    /// The quoted name (the first quoted field).
    pub fn name(&self) -> Option<&'a str> {
        self.fields
            .iter()
            .find(|f| f.key.is_empty() && f.value.starts_with('"'))
            .map(|f| f.value.trim_matches('"'))
    }
}

/// Whether `line` starts like a record: an upper-case kind, an optional label, then `[`.
/// Anything else is log text.
pub fn looks_like_record(line: &str) -> bool {
    split_head(line).is_some()
}

/// (kind, label, text from the `[` on).
fn split_head(line: &str) -> Option<(&str, Option<&str>, &str)> {
    let (kind, rest) = line.split_once(' ')?;
    if kind.is_empty()
        || !kind
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        || !kind.as_bytes()[0].is_ascii_uppercase()
    {
        return None;
    }
    let rest = rest.trim_start();
    if rest.starts_with('[') {
        return Some((kind, None, rest));
    }
    let (label, after) = if let Some(q) = rest.strip_prefix('"') {
        let end = q.find('"')?;
        (&q[..end], &q[end + 1..])
    } else {
        let end = rest.find(' ')?;
        (&rest[..end], &rest[end..])
    };
    let after = after.trim_start();
    after.starts_with('[').then_some((kind, Some(label), after))
}

/// Parses a record line; `Err` says what is wrong with a line that starts like a record.
pub fn parse(line: &str) -> Result<Record<'_>, String> {
    let mut times = Vec::with_capacity(2);
    let (kind, label, rest) = parse_head(line, &mut times)?;
    let mut fields = Vec::new();
    push_fields(rest, &mut fields);
    Ok(Record {
        kind,
        label,
        times: Cow::Owned(times),
        fields: Cow::Owned(fields),
    })
}

/// The kind, label and the text after the times of a record line, its times appended to
/// `times` (some of them when it fails): [`parse`] without vectors of its own, for a reader
/// that keeps the times and fields of many records in one (a vector or two for each record
/// were a tenth of the thread that reads CUPTI text ahead).
pub fn parse_head<'a>(
    line: &'a str,
    times: &mut Vec<i64>,
) -> Result<(&'a str, Option<&'a str>, &'a str), String> {
    let (kind, label, rest) = split_head(line).ok_or("not a record")?;
    let close = rest
        .find(']')
        .ok_or_else(|| format!("{kind}: no closing ']' after the times"))?;
    for t in rest[1..close].split(',') {
        let t = t.trim();
        times.push(
            t.parse::<i64>()
                .map_err(|_| format!("{kind}: time {t:?} is not an integer"))?,
        );
    }
    Ok((kind, label, &rest[close + 1..]))
}

/// Splits `text` at commas outside quotes, brackets and parentheses into `key value` fields.
pub fn push_fields<'a>(text: &'a str, out: &mut Vec<Field<'a>>) {
    for_each_field(text, |f| out.push(f));
}

/// [`push_fields`], handing each field to `each`.
pub fn for_each_field<'a>(text: &'a str, mut each: impl FnMut(Field<'a>)) {
    let mut depth = 0i32;
    let mut quoted = false;
    let mut start = 0;
    for (i, &b) in text.as_bytes().iter().enumerate() {
        // most bytes are none of these: one load tells (matching every byte against each was
        // a third of the thread that reads CUPTI text ahead)
        if !SPECIAL[b as usize] {
            continue;
        }
        match b {
            b'"' => quoted = !quoted,
            b'[' | b'(' if !quoted => depth += 1,
            b']' | b')' if !quoted => depth -= 1,
            b',' if !quoted && depth <= 0 => {
                if let Some(f) = field(text[start..i].trim()) {
                    each(f);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    if let Some(f) = field(text[start..].trim()) {
        each(f);
    }
}

/// The bytes that [`push_fields`] looks at.
static SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut k = 0;
    let special = b"\"[(]),";
    while k < special.len() {
        t[special[k] as usize] = true;
        k += 1;
    }
    t
};

fn field(part: &str) -> Option<Field<'_>> {
    if part.is_empty() {
        return None;
    }
    if part.starts_with('"') {
        return Some(Field {
            key: "",
            value: part,
        });
    }
    if part.ends_with(']') || part.ends_with(')') {
        if let Some(open) = part.find(['[', '(']) {
            return Some(Field {
                key: part[..open].trim_end(),
                value: &part[open..],
            });
        }
    }
    Some(match part.rsplit_once(' ') {
        Some((k, v)) => Field {
            key: k.trim_end(),
            value: v,
        },
        None => Field {
            key: "",
            value: part,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f<'a>(key: &'a str, value: &'a str) -> Field<'a> {
        Field { key, value }
    }

    #[test]
    fn records_of_each_shape() {
        let r = parse("RUNTIME [ 1756213856511953089, 1756213856511965149 ] duration 12060, \"cudaSetDevice_v3020\", cbid 16, processId 1043317, threadId 2147479552, correlationId 314").unwrap();
        assert_eq!(r.kind, "RUNTIME");
        assert_eq!(r.label, None);
        assert_eq!(*r.times, [1756213856511953089, 1756213856511965149]);
        assert_eq!(r.name(), Some("cudaSetDevice_v3020"));
        assert_eq!(r.int("threadId"), Some(2147479552));
        assert_eq!(r.int("correlationId"), Some(314));

        let r = parse("MEMCPY \"HtoD\" [ 10, 20 ] duration 10, size 4096, srcKind PAGEABLE, correlationId 132").unwrap();
        assert_eq!(r.label, Some("HtoD"));
        assert_eq!(r.get("srcKind"), Some("PAGEABLE"));

        let r = parse("OVERHEAD ACTIVITY_BUFFER_REQUEST [ 1, 5 ] duration 4, THREAD, id 2830733312, correlation id 1").unwrap();
        assert_eq!(r.label, Some("ACTIVITY_BUFFER_REQUEST"));
        assert_eq!(r.fields[1], f("", "THREAD"));
        assert_eq!(r.int("correlation id"), Some(1));

        let r =
            parse("MEMORY2 [ 1761183645310290248 ] memoryOperationType ALLOCATE, size 4, pc 0,")
                .unwrap();
        assert_eq!(*r.times, [1761183645310290248]);
        assert_eq!(r.fields.len(), 3);

        let mut more = Vec::new();
        push_fields(
            "\tgrid [ 1, 1, 1 ], block [ 32, 1, 1 ], sharedMemory (static 0, dynamic 0)",
            &mut more,
        );
        assert_eq!(
            more,
            [
                f("grid", "[ 1, 1, 1 ]"),
                f("block", "[ 32, 1, 1 ]"),
                f("sharedMemory", "(static 0, dynamic 0)")
            ]
        );
        let mut names = Vec::new();
        push_fields(
            "duration 5, \"void k<int, 2>(float*)\", correlationId 9",
            &mut names,
        );
        assert_eq!(names[1], f("", "\"void k<int, 2>(float*)\""));
    }

    /// Splits as `push_fields` does, one char at a time (its former code).
    fn fields_by_chars(text: &str) -> Vec<Field<'_>> {
        let (mut out, mut depth, mut quoted, mut start) = (Vec::new(), 0i32, false, 0);
        for (i, c) in text.char_indices() {
            match c {
                '"' => quoted = !quoted,
                '[' | '(' if !quoted => depth += 1,
                ']' | ')' if !quoted => depth -= 1,
                ',' if !quoted && depth <= 0 => {
                    out.extend(field(text[start..i].trim()));
                    start = i + 1;
                }
                _ => {}
            }
        }
        out.extend(field(text[start..].trim()));
        out
    }

    #[test]
    fn fields_split_where_commas_are_outside_quotes_and_brackets() {
        let alphabet = [
            'a', 'b', ' ', '"', '[', ']', '(', ')', ',', 'é', '1', '\t', '\u{a0}',
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let text: String = (0..(seed % 24))
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    alphabet[(seed % alphabet.len() as u64) as usize]
                })
                .collect();
            let mut got = Vec::new();
            push_fields(&text, &mut got);
            assert_eq!(got, fields_by_chars(&text), "{text:?}");
        }
    }

    #[test]
    fn log_lines_and_bad_records() {
        for log in [
            "Calling CUPTI API: cuptiSubscribe(&x)",
            "Enabling CUPTI_ACTIVITY_KIND_MEMCPY.",
            "It took 1236ms on the host to launch 4 kernels in serial",
            "Activity buffer size = 8388608 bytes.",
        ] {
            assert!(!looks_like_record(log), "{log}");
        }
        assert!(parse("RUNTIME [ 1, x ] duration 1")
            .unwrap_err()
            .contains("not an integer"));
        assert!(parse("RUNTIME [ 1, 2 duration 1")
            .unwrap_err()
            .contains("']'"));
    }
}
