//! One plain folded line: `frame;frame;leaf COUNT`, or `... BEFORE AFTER` (differential).
//! Parsed as inferno parses it: the count is the text after the last space; a count with a
//! fraction is truncated; a second count before it makes the line differential.

use tracex_ir::DiagKind;

use crate::diag as d;

/// The counts at the end of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// The last column: the only count of a plain line, the "after" of a differential one.
    pub last: i64,
    /// The first of two columns.
    pub before: Option<i64>,
    /// A count had a non-zero fractional part that was dropped.
    pub truncated: bool,
}

#[derive(Debug)]
pub enum Line<'a> {
    /// `stack` is empty for a line that is only a count.
    Stack {
        stack: &'a str,
        counts: Counts,
    },
    Bad(&'static DiagKind),
}

impl PartialEq for Line<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Line::Stack {
                    stack: a,
                    counts: x,
                },
                Line::Stack {
                    stack: b,
                    counts: y,
                },
            ) => a == b && x == y,
            (Line::Bad(a), Line::Bad(b)) => a.name == b.name,
            _ => false,
        }
    }
}

enum Count {
    Value { n: i64, truncated: bool },
    Negative,
    TooBig,
    NotANumber,
}

/// A count token: digits, optionally a `.` and more digits (the fraction is dropped).
fn count(tok: &str) -> Count {
    let (negative, unsigned) = match tok.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, tok),
    };
    let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) {
        return Count::NotANumber;
    }
    if negative {
        return Count::Negative;
    }
    match int.parse::<i64>() {
        Ok(n) => Count::Value {
            n,
            truncated: frac.bytes().any(|b| b != b'0'),
        },
        Err(_) => Count::TooBig,
    }
}

/// Parses a line that is trimmed, not empty and not a comment.
pub fn parse(line: &str) -> Line<'_> {
    let (rest, last) = match line.rfind(' ') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => ("", line),
    };
    let (last, mut truncated) = match count(last) {
        Count::Value { n, truncated } => (n, truncated),
        Count::Negative => return Line::Bad(&d::NEGATIVE_COUNT),
        Count::TooBig => return Line::Bad(&d::BAD_COUNT),
        Count::NotANumber => return Line::Bad(&d::MISSING_COUNT),
    };
    let rest = rest.trim_end();
    let mut stack = rest;
    let mut before = None;
    if let Some(i) = rest.rfind(' ') {
        if let Count::Value { n, truncated: t } = count(&rest[i + 1..]) {
            before = Some(n);
            truncated |= t;
            stack = rest[..i].trim_end();
        }
    }
    Line::stack(stack, last, before, truncated)
}

impl<'a> Line<'a> {
    fn stack(stack: &'a str, last: i64, before: Option<i64>, truncated: bool) -> Line<'a> {
        Line::Stack {
            stack,
            counts: Counts {
                last,
                before,
                truncated,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(stack: &str, last: i64, before: Option<i64>, truncated: bool) -> Line<'_> {
        Line::stack(stack, last, before, truncated)
    }

    #[test]
    fn lines_as_inferno_reads_them() {
        assert_eq!(parse("a;b 3"), ok("a;b", 3, None, false));
        assert_eq!(
            parse("f(int, char) const;g 12"),
            ok("f(int, char) const;g", 12, None, false)
        );
        assert_eq!(parse("a;b 2.7"), ok("a;b", 2, None, true));
        assert_eq!(parse("a;b 3."), ok("a;b", 3, None, false));
        assert_eq!(parse("a;b 3.000"), ok("a;b", 3, None, false));
        assert_eq!(parse("a;b 31 56"), ok("a;b", 56, Some(31), false));
        assert_eq!(parse("2"), ok("", 2, None, false));
        assert_eq!(parse("a;b 0"), ok("a;b", 0, None, false));
        assert_eq!(parse("a;b -2"), Line::Bad(&d::NEGATIVE_COUNT));
        assert_eq!(parse("a;b"), Line::Bad(&d::MISSING_COUNT));
        assert_eq!(parse("a;b .5"), Line::Bad(&d::MISSING_COUNT));
        assert_eq!(parse("a;b\t3"), Line::Bad(&d::MISSING_COUNT));
        assert_eq!(parse("a;b 99999999999999999999"), Line::Bad(&d::BAD_COUNT));
        // a negative first column is part of the stack, as in inferno
        assert_eq!(parse("a;b -1 4"), ok("a;b -1", 4, None, false));
    }
}
