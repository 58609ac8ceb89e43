//! Numbers in JSON text: timestamps in µs become integer nanoseconds without passing through
//! `f64` (the IR's exact decimal parser), so `1700000000000.123` stays exact.

use tracex_ir::time::{parse_decimal, Decimal};

/// Parses the text of a JSON number, or of a JSON string holding one (`"12.5"`), as µs; the
/// result is in ns. Returns `None` for anything else or a value out of `i64` ns range.
pub fn micros_to_ns(text: &str) -> Option<Decimal> {
    let t = text.trim();
    let t = match t.strip_prefix('"') {
        Some(inner) => inner.strip_suffix('"')?.trim(),
        None => t,
    };
    parse_decimal(t, 3)
}

/// A JSON integer (or a string holding one) that fits `i64`.
pub fn parse_i64(text: &str) -> Option<i64> {
    let t = text.trim();
    let t = match t.strip_prefix('"') {
        Some(inner) => inner.strip_suffix('"')?.trim(),
        None => t,
    };
    t.parse::<i64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(t: &str) -> Option<i64> {
        micros_to_ns(t).map(|m| m.value)
    }

    #[test]
    fn exact_decimals() {
        assert_eq!(ns("1700000000000.123"), Some(1_700_000_000_000_123));
        assert_eq!(ns("1712195495519689.047"), Some(1_712_195_495_519_689_047));
        assert_eq!(ns("0"), Some(0));
        assert_eq!(ns("0.001"), Some(1));
        assert_eq!(ns("12"), Some(12_000));
        assert_eq!(ns("-1.5"), Some(-1_500));
        assert_eq!(ns("\"123.456\""), Some(123_456));
        assert_eq!(ns("1.5e3"), Some(1_500_000));
        assert_eq!(ns("15E-1"), Some(1_500));
        assert_eq!(ns("1e-3"), Some(1));
        assert_eq!(ns("0.0"), Some(0));
        assert_eq!(ns("100"), Some(100_000));
        assert_eq!(ns("1e2"), Some(100_000));
    }

    #[test]
    fn rounding_below_a_nanosecond() {
        let m = micros_to_ns("1124609200224.7295").unwrap();
        assert_eq!(m.value, 1_124_609_200_224_730);
        assert!(m.rounded);
        let m = micros_to_ns("0.0004").unwrap();
        assert_eq!((m.value, m.rounded), (0, true));
        let m = micros_to_ns("0.00006").unwrap();
        assert_eq!((m.value, m.rounded), (0, true));
        let m = micros_to_ns("0.0006").unwrap();
        assert_eq!((m.value, m.rounded), (1, true));
        let m = micros_to_ns("2.5000").unwrap();
        assert_eq!((m.value, m.rounded), (2_500, false));
    }

    #[test]
    fn rejects_garbage_and_overflow() {
        assert_eq!(ns(""), None);
        assert_eq!(ns("abc"), None);
        assert_eq!(ns("1.2.3"), None);
        assert_eq!(ns("null"), None);
        assert_eq!(ns("1e400"), None);
        assert_eq!(ns("99999999999999999999"), None);
        assert_eq!(ns("9223372036854775.807"), Some(i64::MAX));
        assert_eq!(ns("-9223372036854775.808"), Some(i64::MIN));
    }
}
