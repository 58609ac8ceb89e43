//! Time: every timestamp and duration inside tracex is an `i64` count of nanoseconds.

/// A point in time, in nanoseconds since the trace's clock origin (see [`crate::Clock`]).
pub type Ts = i64;
/// A duration in nanoseconds, never negative on a well-formed slice.
pub type Dur = i64;

/// Appends `ns` as microseconds with exactly three decimals (`1234567` → `1234.567`),
/// computed with integer arithmetic so that no nanosecond is lost.
pub fn push_micros(out: &mut Vec<u8>, ns: i64) {
    let neg = ns < 0;
    let abs = ns.unsigned_abs();
    if neg {
        out.push(b'-');
    }
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(abs / 1000).as_bytes());
    let frac = (abs % 1000) as u16;
    out.extend_from_slice(&[
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
}

/// [`push_micros`] into a new `String`.
pub fn micros_string(ns: i64) -> String {
    let mut v = Vec::with_capacity(24);
    push_micros(&mut v, ns);
    String::from_utf8(v).expect("ascii")
}

/// Parses a duration with an optional unit suffix: `ns`, `us`/`µs`, `ms`, `s` (no suffix = ns).
/// Decimal values are exact (`1.5ms` = 1 500 000 ns); a value finer than 1 ns is an error.
pub fn parse_duration(text: &str) -> Option<i64> {
    let t = text.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ns") {
        (n, 1i128)
    } else if let Some(n) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
        (n, 1_000)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1_000_000)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1_000_000_000)
    } else {
        (t, 1)
    };
    let num = num.trim();
    let (neg, num) = match num.strip_prefix('-') {
        Some(n) => (true, n),
        None => (false, num),
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut v: i128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    v = v.checked_mul(scale)?;
    let mut unit = scale;
    for d in frac.bytes() {
        if unit == 1 {
            if d != b'0' {
                return None;
            }
            continue;
        }
        unit /= 10;
        v += (d - b'0') as i128 * unit;
    }
    let v = if neg { -v } else { v };
    i64::try_from(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_exact() {
        assert_eq!(micros_string(0), "0.000");
        assert_eq!(micros_string(1), "0.001");
        assert_eq!(micros_string(1_700_000_000_000_123), "1700000000000.123");
        assert_eq!(micros_string(-1_500), "-1.500");
        assert_eq!(micros_string(-5), "-0.005");
        assert_eq!(micros_string(i64::MIN), "-9223372036854775.808");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10"), Some(10));
        assert_eq!(parse_duration("1.5ms"), Some(1_500_000));
        assert_eq!(parse_duration("2s"), Some(2_000_000_000));
        assert_eq!(parse_duration("3us"), Some(3_000));
        assert_eq!(parse_duration("0.001us"), Some(1));
        assert_eq!(parse_duration("0.0001us"), None);
        assert_eq!(parse_duration("-4ns"), Some(-4));
        assert_eq!(parse_duration("abc"), None);
        assert_eq!(parse_duration("ms"), None);
    }
}
