//! Time: every timestamp and duration inside tracex is an `i64` count of nanoseconds.

/// A point in time, in nanoseconds since the trace's clock origin (see [`crate::Clock`]).
pub type Ts = i64;
/// A duration in nanoseconds, never negative on a well-formed slice.
pub type Dur = i64;

/// Timestamps above this (ns, about 1973) are at the scale of Unix time: Kineto and CUPTI write
/// epoch times without saying so, and written as µs with three decimals such a time has more
/// digits (19) than a double keeps (about 16).
pub const UNIX_SCALE_NS: i64 = 100_000_000_000_000_000;

/// One second in ns.
pub const NS_PER_SEC: i64 = 1_000_000_000;

/// Appends `ns` as microseconds with exactly three decimals (`1234567` → `1234.567`),
/// computed with integer arithmetic so that no nanosecond is lost.
pub fn push_micros(out: &mut Vec<u8>, ns: i64) {
    let neg = ns < 0;
    let abs = ns.unsigned_abs();
    if neg {
        out.push(b'-');
    }
    crate::decimal::push_u64(out, abs / 1000);
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
/// Decimal values are exact (`1.5ms` = 1 500 000 ns); a value finer than 1 ns is an error, as
/// are a `+` sign and an exponent.
pub fn parse_duration(text: &str) -> Option<i64> {
    let t = text.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ns") {
        (n, 0)
    } else if let Some(n) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
        (n, 3)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 9)
    } else {
        (t, 0)
    };
    let num = num.trim();
    if num.contains(['+', 'e', 'E']) {
        return None;
    }
    parse_decimal(num, scale)
        .filter(|d| !d.rounded)
        .map(|d| d.value)
}

/// A decimal number scaled to an integer (see [`parse_decimal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decimal {
    pub value: i64,
    /// Nonzero digits below the unit were rounded away (to nearest, ties away from zero).
    pub rounded: bool,
}

/// Parses the decimal number `t` (JSON syntax: optional sign, digits, fraction, exponent)
/// multiplied by `10^scale`, as an integer rounded to nearest, exactly: no `f64` on the way
/// (`parse_decimal("1700000000000.123", 3)` is 1700000000000123). `None` for anything else or
/// a value out of `i64` range.
pub fn parse_decimal(t: &str, scale: i32) -> Option<Decimal> {
    parse_plain(t.as_bytes(), scale).or_else(|| parse_general(t, scale))
}

/// [`parse_decimal`] for the common text, `-?[0-9]+(\.[0-9]*)?` whose value fits `i64`, in one
/// pass and without allocating (most timestamps of every trace). `None` sends the text
/// to [`parse_general`], which decides everything else, including errors.
fn parse_plain(b: &[u8], scale: i32) -> Option<Decimal> {
    if !(0..=9).contains(&scale) {
        return None;
    }
    let (neg, mut i) = match b.first() {
        Some(b'-') => (true, 1),
        _ => (false, 0),
    };
    let start = i;
    let mut v = 0u64;
    let keep = |v: &mut u64, d: u8| {
        *v = v.checked_mul(10)?.checked_add(d as u64)?;
        Some(())
    };
    // epoch times in µs have 16 integer digits: eight at a time, then one by one (the same
    // overflow, as the value only grows digit by digit)
    while let Some(eight) = b.get(i..i + 8).and_then(eight_digits) {
        v = v.checked_mul(100_000_000)?.checked_add(eight)?;
        i += 8;
    }
    while let Some(&c @ b'0'..=b'9') = b.get(i) {
        keep(&mut v, c - b'0')?;
        i += 1;
    }
    if i == start {
        return None;
    }
    let (mut frac, mut rounded, mut up) = (0i32, false, false);
    if b.get(i) == Some(&b'.') {
        i += 1;
        while let Some(&c @ b'0'..=b'9') = b.get(i) {
            let d = c - b'0';
            if frac < scale {
                keep(&mut v, d)?;
            } else {
                // the first dropped digit rounds (half away from zero); any nonzero one marks it
                up |= frac == scale && d >= 5;
                rounded |= d != 0;
            }
            frac += 1;
            i += 1;
        }
    }
    if i != b.len() {
        return None;
    }
    for _ in frac.min(scale)..scale {
        keep(&mut v, 0)?;
    }
    let v = i64::try_from(v.checked_add(up as u64)?).ok()?;
    Some(Decimal {
        value: if neg { -v } else { v },
        rounded,
    })
}

/// The value of eight ASCII digits (`b` holds eight bytes), or `None` if one is not a digit: all
/// eight at once in one word, where a digit at a time was most of the Chrome reader's time
/// parsing timestamps.
fn eight_digits(b: &[u8]) -> Option<u64> {
    let x = u64::from_le_bytes(b.try_into().ok()?);
    // each byte is 0x30..=0x39: its high nibble is 3, and adding 6 does not carry out of it
    let high = 0xF0F0_F0F0_F0F0_F0F0;
    if x & high != 0x3030_3030_3030_3030
        || x.wrapping_add(0x0606_0606_0606_0606) & high != 0x3030_3030_3030_3030
    {
        return None;
    }
    // the first byte is the most significant digit: pairs, then quads, then the eight
    let d = x - 0x3030_3030_3030_3030;
    let pairs = (d * 10 + (d >> 8)) & 0x00FF_00FF_00FF_00FF;
    let quads = (pairs * 100 + (pairs >> 16)) & 0x0000_FFFF_0000_FFFF;
    Some((quads * 10_000 + (quads >> 32)) & 0xFFFF_FFFF)
}

/// [`parse_decimal`] for any text: exponents, `+`, many digits.
fn parse_general(t: &str, scale: i32) -> Option<Decimal> {
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
    let value = i64::try_from(v).ok()?;
    Some(Decimal { value, rounded })
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
    fn exact_decimals() {
        let d = |t, scale| parse_decimal(t, scale).map(|d| (d.value, d.rounded));
        assert_eq!(
            d("1700000000000.123", 3),
            Some((1_700_000_000_000_123, false))
        );
        assert_eq!(d("1.5e3", 0), Some((1_500, false)));
        assert_eq!(d("-0.0015", 3), Some((-2, true)));
        assert_eq!(d("2.5", 0), Some((3, true)));
        assert_eq!(d("12", 9), Some((12_000_000_000, false)));
        assert_eq!(d("1e400", 0), None);
        assert_eq!(d(".", 0), None);
        assert_eq!(d("1.2.3", 0), None);
    }

    #[test]
    fn the_plain_path_agrees_with_the_general_one() {
        // every text over a small alphabet up to 6 characters, and long timestamps
        let alphabet = ["0", "1", "5", "9", ".", "-", "e", "+"];
        let mut texts: Vec<String> = vec![String::new()];
        let mut all = Vec::new();
        for _ in 0..6 {
            texts = texts
                .iter()
                .flat_map(|t| alphabet.iter().map(move |a| format!("{t}{a}")))
                .collect();
            all.extend(texts.iter().cloned());
        }
        all.extend(
            [
                "1712195495519689.047",
                "1712195495519689.0475",
                "1712195495519689.0465001",
                "-1712195495519689.999999",
                "999999999999999.999",
                "9999999999999999.9995",
                "99999999999999999999",
                "0.00049",
                "0.0005",
                "-0.0005",
                "00000000000000000000001.5",
            ]
            .map(String::from),
        );
        for t in &all {
            for scale in [0, 3, 6, 9] {
                if let Some(fast) = parse_plain(t.as_bytes(), scale) {
                    assert_eq!(Some(fast), parse_general(t, scale), "{t:?} scale {scale}");
                }
                assert_eq!(parse_decimal(t, scale), parse_general(t, scale), "{t:?}");
            }
        }
        assert!(parse_plain(b"1712195495519689.047", 3).is_some());
    }

    /// Eight bytes at a time read the same digits as one at a time, next to every byte just
    /// outside `0`-`9`, and long numbers overflow where they did.
    #[test]
    fn eight_digits_at_once_as_one_at_a_time() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let bytes = b"0123456789/:.-\x00\xff\x30\x39";
        for _ in 0..200_000 {
            let mut b = [0u8; 8];
            for c in &mut b {
                let r = next();
                // mostly digits, so that all eight are often digits
                *c = match r % 4 {
                    0 => bytes[(r >> 8) as usize % bytes.len()],
                    _ => b'0' + (r >> 8) as u8 % 10,
                };
            }
            let one_by_one = b.iter().try_fold(0u64, |v, &c| {
                c.is_ascii_digit().then(|| v * 10 + u64::from(c - b'0'))
            });
            assert_eq!(eight_digits(&b), one_by_one, "{b:?}");
        }
        let mut texts: Vec<String> = ["18446744073709551615", "18446744073709551616"]
            .map(String::from)
            .to_vec();
        for _ in 0..20_000 {
            let len = 1 + next() as usize % 26;
            let mut t: String = (0..len)
                .map(|_| char::from(b'0' + next() as u8 % 10))
                .collect();
            match next() % 4 {
                0 => t.insert(next() as usize % (t.len() + 1), '.'),
                1 => t.insert(0, '-'),
                _ => {}
            }
            texts.push(t);
        }
        for t in &texts {
            for scale in [0, 3, 9] {
                if let Some(fast) = parse_plain(t.as_bytes(), scale) {
                    assert_eq!(Some(fast), parse_general(t, scale), "{t:?} scale {scale}");
                }
                assert_eq!(parse_decimal(t, scale), parse_general(t, scale), "{t:?}");
            }
        }
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
        assert_eq!(parse_duration("5."), Some(5));
        assert_eq!(parse_duration(" 2 ms "), Some(2_000_000));
        assert_eq!(parse_duration("0.0010us"), Some(1));
        assert_eq!(parse_duration("1e3ms"), None);
        assert_eq!(parse_duration("+5s"), None);
        assert_eq!(parse_duration("- 5"), None);
    }
}
