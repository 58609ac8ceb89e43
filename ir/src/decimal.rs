//! Integers as decimal text, for writers that emit millions of numbers (Chrome JSON's `pid`,
//! `tid`, `ts`, args). The digits are made in a fixed block that is appended whole and then
//! cut to length: a copy of known size, where appending the digits themselves was a call to
//! `memcpy` per number (callgrind: itoa and those copies were a fifth of the Chrome writer's
//! instructions on an nsys export).

/// The decimal digits of 0 to 99, two bytes each.
const PAIRS: &[u8; 200] = b"00010203040506070809\
    10111213141516171819\
    20212223242526272829\
    30313233343536373839\
    40414243444546474849\
    50515253545556575859\
    60616263646566676869\
    70717273747576777879\
    80818283848586878889\
    90919293949596979899";

/// The number of decimal digits of `v` (1 for 0).
#[inline]
fn digits(v: u64) -> usize {
    const POW10: [u64; 20] = {
        let mut p = [1u64; 20];
        let mut i = 1;
        while i < 20 {
            p[i] = p[i - 1] * 10;
            i += 1;
        }
        p
    };
    // floor(log10(v)) is floor(bits · log10 2) or one less
    let bits = 64 - (v | 1).leading_zeros() as usize;
    let t = (bits * 1233) >> 12;
    t + usize::from((v | 1) >= POW10[t])
}

/// Writes the digits of `v` at the start of `buf`; returns how many.
#[inline]
fn write_digits(buf: &mut [u8], mut v: u64) -> usize {
    let n = digits(v);
    let mut i = n;
    while v >= 100 {
        let r = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[r..r + 2]);
    }
    if v >= 10 {
        let r = v as usize * 2;
        buf[i - 2..i].copy_from_slice(&PAIRS[r..r + 2]);
    } else {
        buf[i - 1] = b'0' + v as u8;
    }
    n
}

/// Appends the `N`-byte block `buf` and keeps its first `len` bytes.
#[inline]
fn append<const N: usize>(out: &mut Vec<u8>, buf: &[u8; N], len: usize) {
    let at = out.len();
    out.extend_from_slice(buf);
    out.truncate(at + len);
}

/// An integer that [`push_int`] writes: its sign and magnitude.
pub trait Integer: Copy {
    fn sign_magnitude(self) -> (bool, u64);
}

macro_rules! unsigned {
    ($($t:ty)*) => {$(
        impl Integer for $t {
            #[inline]
            fn sign_magnitude(self) -> (bool, u64) {
                (false, self as u64)
            }
        }
    )*};
}
macro_rules! signed {
    ($($t:ty)*) => {$(
        impl Integer for $t {
            #[inline]
            fn sign_magnitude(self) -> (bool, u64) {
                (self < 0, self.unsigned_abs() as u64)
            }
        }
    )*};
}
unsigned!(u8 u16 u32 u64 usize);
signed!(i8 i16 i32 i64 isize);

/// Appends `v` in decimal.
#[inline]
pub fn push_int(out: &mut Vec<u8>, v: impl Integer) {
    let (neg, m) = v.sign_magnitude();
    let mut buf = [b'-'; 24];
    let sign = usize::from(neg);
    let n = write_digits(&mut buf[sign..], m);
    append(out, &buf, sign + n);
}

/// Appends `ns` as microseconds with exactly three decimals (`1234567` → `1234.567`), in
/// integer arithmetic, so that no nanosecond is lost.
#[inline]
pub fn push_micros(out: &mut Vec<u8>, ns: i64) {
    let abs = ns.unsigned_abs();
    let mut buf = [b'-'; 32];
    let sign = usize::from(ns < 0);
    let n = sign + write_digits(&mut buf[sign..], abs / 1000);
    let frac = (abs % 1000) as usize;
    buf[n] = b'.';
    buf[n + 1] = b'0' + (frac / 100) as u8;
    buf[n + 2..n + 4].copy_from_slice(&PAIRS[frac % 100 * 2..frac % 100 * 2 + 2]);
    append(out, &buf, n + 4);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(v: impl Integer) -> String {
        let mut out = b"x".to_vec();
        push_int(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    /// Every power of ten and its neighbours, both ends of every width, against `to_string`.
    #[test]
    fn integers_as_std_writes_them() {
        let mut values = vec![0u64, u64::MAX, u64::MAX - 1];
        let mut p = 1u64;
        while let Some(next) = p.checked_mul(10) {
            values.extend([p - 1, p, p + 1, next - 1]);
            p = next;
        }
        values.extend([p - 1, p, p + 1]);
        for v in values {
            assert_eq!(int(v), format!("x{v}"));
            assert_eq!(digits(v), v.to_string().len(), "{v}");
            let s = v as i64;
            assert_eq!(int(s), format!("x{s}"));
        }
        for v in [i64::MIN, i64::MIN + 1, -1, -9, -10, -99, -100] {
            assert_eq!(int(v), format!("x{v}"));
        }
        assert_eq!(int(255u8), "x255");
        assert_eq!(int(-128i8), "x-128");
        assert_eq!(int(u32::MAX), format!("x{}", u32::MAX));
    }

    #[test]
    fn micros_keep_every_nanosecond() {
        for (ns, text) in [
            (0, "0.000"),
            (1, "0.001"),
            (999, "0.999"),
            (1000, "1.000"),
            (1_234_567, "1234.567"),
            (-1, "-0.001"),
            (-1_234_567, "-1234.567"),
            (i64::MAX, "9223372036854775.807"),
            (i64::MIN, "-9223372036854775.808"),
        ] {
            let mut out = b"ts:".to_vec();
            push_micros(&mut out, ns);
            assert_eq!(String::from_utf8(out).unwrap(), format!("ts:{text}"));
        }
    }
}
