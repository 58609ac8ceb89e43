//! One extended folded line of the eBPF uprobe profiler:
//! `timestamp_ns comm pid tid cpu frame;frame;...`. The first five fields are split on
//! whitespace; the rest of the line is the stack (frames contain spaces).

use std::borrow::Cow;

use tracex_ir::DiagKind;

use crate::diag as d;

#[derive(Debug, PartialEq, Eq)]
pub struct ExtLine<'a> {
    pub ts: i64,
    pub comm: &'a str,
    pub pid: i64,
    pub tid: i64,
    pub cpu: u32,
    pub stack: &'a str,
}

/// The first `N` whitespace-separated fields and the rest (trimmed), if there are that many.
fn fields<const N: usize>(line: &str) -> Option<([&str; N], &str)> {
    let mut out = [""; N];
    let mut rest = trim_start(line);
    for field in &mut out {
        if rest.is_empty() {
            return None;
        }
        let end = field_end(rest);
        *field = &rest[..end];
        rest = trim_start(&rest[end..]);
    }
    Some((out, rest.trim_end()))
}

/// An ASCII byte `char::is_whitespace` accepts (`u8::is_ascii_whitespace` leaves out the
/// vertical tab).
fn ascii_space(b: u8) -> bool {
    b.is_ascii_whitespace() || b == 0x0b
}

/// `str::trim_start`, by bytes while they are ASCII.
fn trim_start(s: &str) -> &str {
    match s.bytes().position(|b| !ascii_space(b)) {
        Some(i) if !s.as_bytes()[i].is_ascii() => s[i..].trim_start(),
        Some(i) => &s[i..],
        None => "",
    }
}

/// Where the first whitespace (Unicode's, as `char::is_whitespace`) of `s` is, or its length.
/// Bytes are scanned, and chars only from a non-ASCII byte on: the fields are ASCII but for
/// the command, and decoding chars was a tenth of importing a million uprobe stacks.
fn field_end(s: &str) -> usize {
    match s.bytes().position(|b| ascii_space(b) || !b.is_ascii()) {
        Some(i) if !s.as_bytes()[i].is_ascii() => {
            i + s[i..].find(char::is_whitespace).unwrap_or(s.len() - i)
        }
        Some(i) => i,
        None => s.len(),
    }
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// The value of a non-empty string of ASCII digits that fits `i64`, in one pass.
fn decimal(s: &str) -> Option<i64> {
    if s.is_empty() {
        return None;
    }
    s.bytes().try_fold(0i64, |v, b| {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v.checked_mul(10)?.checked_add(d as i64)
    })
}

/// Whether a line has the extended shape: a numeric timestamp, a command, three numbers, and a
/// stack.
pub fn looks_extended(line: &str) -> bool {
    match fields::<5>(line) {
        Some((f, rest)) => {
            !rest.is_empty() && digits(f[0]) && digits(f[2]) && digits(f[3]) && digits(f[4])
        }
        None => false,
    }
}

/// Parses a trimmed, non-empty line; the error is the diagnostic and a description.
pub fn parse(line: &str) -> Result<ExtLine<'_>, (&'static DiagKind, String)> {
    let short = || {
        (
            &d::EXT_SHORT_LINE,
            "fewer than six fields (timestamp_ns comm pid tid cpu stack)".to_string(),
        )
    };
    let (f, stack) = fields::<5>(line).ok_or_else(short)?;
    if stack.is_empty() {
        return Err(short());
    }
    let num = |what: &str, s: &str| -> Result<i64, (&'static DiagKind, String)> {
        decimal(s).ok_or_else(|| (&d::EXT_BAD_NUMBER, format!("{what} {s:?} is not a number")))
    };
    let ts = num("timestamp", f[0])?;
    let pid = num("pid", f[2])?;
    let tid = num("tid", f[3])?;
    let cpu = u32::try_from(num("cpu", f[4])?).map_err(|_| {
        (
            &d::EXT_BAD_NUMBER,
            format!("cpu {:?} is out of range", f[4]),
        )
    })?;
    Ok(ExtLine {
        ts,
        comm: f[1],
        pid,
        tid,
        cpu,
        stack,
    })
}

/// Removes terminal escape sequences (`ESC [ ... letter`), which a coloured log may carry.
pub fn strip_ansi(line: &str) -> Cow<'_, str> {
    if memchr::memchr(0x1b, line.as_bytes()).is_none() {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_digits_only_and_fit_i64() {
        assert_eq!(decimal("0"), Some(0));
        assert_eq!(decimal("9223372036854775807"), Some(i64::MAX));
        assert_eq!(decimal("9223372036854775808"), None);
        for bad in ["", "-1", "+1", "1a", " 1", "١"] {
            assert_eq!(decimal(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn trimming_is_str_trim_start() {
        for s in [
            "  a b",
            "\u{0b}\t x",
            "\u{a0}\u{3000}y",
            " \u{85}",
            "",
            "   ",
            "é ",
        ] {
            assert_eq!(trim_start(s), s.trim_start(), "{s:?}");
        }
    }

    #[test]
    fn a_field_ends_at_any_unicode_whitespace() {
        for s in [
            "abc def",
            "abc",
            "a\u{0b}b",
            "é\u{a0}x",
            "ab\u{3000}c",
            "x\u{85}",
            "ü",
            "",
            "\tq",
        ] {
            let want = s.find(char::is_whitespace).unwrap_or(s.len());
            assert_eq!(field_end(s), want, "{s:?}");
        }
    }

    #[test]
    fn splits_five_fields_then_the_stack() {
        let l = "1761680628903821454 runcu 3861826 3861827 1 main;chat(Transformer*, int);cudaLaunchKernel";
        assert!(looks_extended(l));
        assert_eq!(
            parse(l).unwrap(),
            ExtLine {
                ts: 1761680628903821454,
                comm: "runcu",
                pid: 3861826,
                tid: 3861827,
                cpu: 1,
                stack: "main;chat(Transformer*, int);cudaLaunchKernel",
            }
        );
        assert!(!looks_extended("a;b 3"));
        assert!(!looks_extended("main;foo 12 3 4 5 6"));
    }

    #[test]
    fn bad_lines_say_why() {
        assert_eq!(
            parse("1 a 2 3 4").unwrap_err().0.name,
            "folded_ext_short_line"
        );
        assert_eq!(
            parse("17 a 2 3").unwrap_err().0.name,
            "folded_ext_short_line"
        );
        let (k, why) = parse("17x a 2 3 4 main").unwrap_err();
        assert_eq!(k.name, "folded_ext_bad_number");
        assert!(why.contains("timestamp"), "{why}");
        assert_eq!(
            parse("1 a 2 3 99999999999 main").unwrap_err().0.name,
            "folded_ext_bad_number"
        );
    }

    #[test]
    fn strips_colour() {
        assert_eq!(strip_ansi("\u{1b}[31m1\u{1b}[0m a"), "1 a");
        assert_eq!(strip_ansi("plain"), "plain");
    }
}
