//! Decimal integers appended to a byte buffer, their digits written in place.
//!
//! `itoa` writes the digits into a scratch buffer, two bytes per store, and the caller copies
//! them out. Each load of that short copy spans several of those stores, which the CPU cannot
//! forward, so every copy waited for the stores to reach the cache: in `perf`, the load of
//! `memcpy`'s 4-to-7-byte path was 16% of the Chrome JSON writer's thread on the nsys 1M
//! benchmark. Here the digits are stored straight into the buffer's spare capacity.

/// "00", "01", ..., "99".
const PAIRS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// Most digits a `u64` has.
const MAX_DIGITS: usize = 20;

/// Appends `v` in decimal.
#[inline]
pub fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let n = v.checked_ilog10().map_or(1, |l| l as usize + 1);
    out.reserve(MAX_DIGITS);
    let digits = &mut out.spare_capacity_mut()[..MAX_DIGITS];
    let mut end = n;
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        end -= 2;
        digits[end].write(PAIRS[pair]);
        digits[end + 1].write(PAIRS[pair + 1]);
    }
    // one or two digits are left, and `end` is their count
    if v >= 10 {
        let pair = v as usize * 2;
        digits[0].write(PAIRS[pair]);
        digits[1].write(PAIRS[pair + 1]);
    } else {
        digits[0].write(b'0' + v as u8);
    }
    let len = out.len() + n;
    // SAFETY: `len` is within the capacity (`n` <= MAX_DIGITS were reserved), and the `n`
    // bytes after the old length were all written above: the loop wrote positions
    // `end..n` going down two at a time, and the last step wrote `0..end` (`end` is 1 or 2).
    unsafe { out.set_len(len) };
}

/// Appends `v` in decimal, with a `-` when it is negative.
#[inline]
pub fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

/// Integers that [`push`] appends.
pub trait Decimal: Copy {
    fn push_to(self, out: &mut Vec<u8>);
}

macro_rules! decimal {
    ($via:ident: $($t:ty),*) => {$(
        impl Decimal for $t {
            #[inline]
            fn push_to(self, out: &mut Vec<u8>) {
                $via(out, self as _)
            }
        }
    )*};
}
decimal!(push_u64: u8, u16, u32, u64, usize);
decimal!(push_i64: i8, i16, i32, i64, isize);

/// Appends `v` in decimal.
#[inline]
pub fn push(out: &mut Vec<u8>, v: impl Decimal) {
    v.push_to(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_as_display() {
        let mut cases: Vec<i64> = vec![0, 1, 9, 10, 99, 100, 101, 999, 1000, i64::MAX, i64::MIN];
        let mut p: i64 = 1;
        while let Some(q) = p.checked_mul(10) {
            cases.extend([p - 1, p, p + 1, -p, -(p - 1), q / 2 + 7]);
            p = q;
        }
        for v in cases {
            let mut out = b"x".to_vec();
            push_i64(&mut out, v);
            assert_eq!(out, format!("x{v}").into_bytes(), "{v}");
        }
        for v in [
            u64::MAX,
            u64::MAX / 10,
            10_000_000_000_000_000_000,
            9_999_999_999,
        ] {
            let mut out = Vec::new();
            push(&mut out, v);
            assert_eq!(out, v.to_string().into_bytes());
        }
        // every digit count, from a pseudo-random sweep
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut out = Vec::new();
        for i in 0..100_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = x >> (i % 64);
            out.clear();
            push_u64(&mut out, v);
            assert_eq!(out, v.to_string().into_bytes());
            out.clear();
            push_i64(&mut out, v as i64);
            assert_eq!(out, (v as i64).to_string().into_bytes());
        }
        let mut out = Vec::new();
        push(&mut out, 42u32);
        push(&mut out, -7i32);
        assert_eq!(out, b"42-7");
    }
}
