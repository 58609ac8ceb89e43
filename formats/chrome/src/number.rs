//! Exact number parsing from JSON text: timestamps in µs become integer nanoseconds without
//! passing through `f64`, so `1700000000000.123` stays exact.

/// A JSON number (or numeric string) in µs, converted to ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Micros {
    pub ns: i64,
    /// Digits below 1 ns were rounded away (to nearest, ties away from zero).
    pub rounded: bool,
}

/// Parses the text of a JSON number, or of a JSON string holding one (`"12.5"`), as µs.
/// Returns `None` for anything else or a value out of `i64` ns range.
pub fn micros_to_ns(text: &str) -> Option<Micros> {
    let t = text.trim();
    let t = match t.strip_prefix('"') {
        Some(inner) => inner.strip_suffix('"')?.trim(),
        None => t,
    };
    decimal_scaled(t, 3)
}

/// Parses a decimal number `t` (JSON syntax, optional exponent) multiplied by `10^scale`, as an
/// integer rounded to nearest.
fn decimal_scaled(t: &str, scale: i32) -> Option<Micros> {
    let b = t.as_bytes();
    let mut i = 0;
    let neg = match b.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    // Collect significant digits and the position of the decimal point.
    let mut digits: Vec<u8> = Vec::with_capacity(24);
    let mut point: i32 = 0; // digits before the decimal point
    let mut seen_point = false;
    let mut any = false;
    while i < b.len() {
        match b[i] {
            d @ b'0'..=b'9' => {
                any = true;
                if digits.is_empty() && d == b'0' {
                    // leading zero: only moves the point if after it
                    if seen_point {
                        point -= 1;
                    }
                } else {
                    digits.push(d - b'0');
                    if !seen_point {
                        point += 1;
                    }
                }
            }
            b'.' if !seen_point => seen_point = true,
            b'e' | b'E' => break,
            _ => return None,
        }
        i += 1;
    }
    if !any {
        return None;
    }
    let mut exp: i32 = 0;
    if i < b.len() {
        // exponent
        i += 1;
        let (eneg, start) = match b.get(i) {
            Some(b'-') => (true, i + 1),
            Some(b'+') => (false, i + 1),
            _ => (false, i),
        };
        let e = &t[start..];
        if e.is_empty() || !e.bytes().all(|c| c.is_ascii_digit()) || e.len() > 6 {
            return None;
        }
        exp = e.parse::<i32>().ok()?;
        if eneg {
            exp = -exp;
        }
    }
    // value = 0.d1d2d3... * 10^(point + exp); we want it * 10^scale.
    let int_digits = point + exp + scale;
    let mut v: i128 = 0;
    let mut rounded = false;
    for (k, &d) in digits.iter().enumerate() {
        if (k as i32) < int_digits {
            v = v.checked_mul(10)?.checked_add(d as i128)?;
            if v > i64::MAX as i128 + 1 {
                return None;
            }
        } else {
            // first dropped digit decides rounding; any nonzero dropped digit means rounded
            let rest = &digits[k..];
            if rest.iter().any(|&x| x != 0) {
                rounded = true;
            }
            // the first dropped digit is the rounding digit only if no zeros are implied before it
            if k as i32 == int_digits && rest[0] >= 5 {
                v += 1;
            }
            break;
        }
    }
    // trailing zeros implied by a large exponent
    let present = digits.len() as i32;
    if int_digits > present {
        for _ in 0..(int_digits - present.max(0)) {
            v = v.checked_mul(10)?;
            if v > i64::MAX as i128 + 1 {
                return None;
            }
        }
    }
    let v = if neg { -v } else { v };
    let ns = i64::try_from(v).ok()?;
    Some(Micros { ns, rounded })
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
        micros_to_ns(t).map(|m| m.ns)
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
        assert_eq!(m.ns, 1_124_609_200_224_730);
        assert!(m.rounded);
        let m = micros_to_ns("0.0004").unwrap();
        assert_eq!((m.ns, m.rounded), (0, true));
        let m = micros_to_ns("0.00006").unwrap();
        assert_eq!((m.ns, m.rounded), (0, true));
        let m = micros_to_ns("0.0006").unwrap();
        assert_eq!((m.ns, m.rounded), (1, true));
        let m = micros_to_ns("2.5000").unwrap();
        assert_eq!((m.ns, m.rounded), (2_500, false));
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
