//! rocprof writes `ts`/`dur` in whole microseconds and the exact times in nanoseconds in
//! `args.BeginNs` / `args.EndNs` (decimal strings). Those are used when they agree with
//! `ts`/`dur` to within the microsecond rounding, as the Chrome→OTF2 reference converter does.

use tracex_ir::{Defs, Slice, Value};

fn ns_arg(defs: &Defs, s: &Slice, key: &str) -> Option<i64> {
    let k = defs.strings.lookup(key)?;
    match &s.args.iter().find(|a| a.key == k)?.value {
        Value::Str(t) => t.trim().parse().ok(),
        Value::Int(i) => Some(*i),
        Value::UInt(u) => i64::try_from(*u).ok(),
        _ => None,
    }
}

/// Sets the slice's exact start and duration from rocprof's arguments; true if it did.
pub fn exact_times(defs: &Defs, s: &mut Slice) -> bool {
    let (Some(begin), Some(end), Some(dur)) =
        (ns_arg(defs, s, "BeginNs"), ns_arg(defs, s, "EndNs"), s.dur)
    else {
        return false;
    };
    let agrees =
        end >= begin && (begin - s.ts).abs() < 1_000 && ((end - begin) - dur).abs() <= 1_000;
    if agrees {
        s.ts = begin;
        s.dur = Some(end - begin);
    }
    agrees
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracex_ir::{Arg, TrackId};

    #[test]
    fn uses_exact_ns_only_when_consistent() {
        let mut d = Defs::new();
        let b = d.intern("BeginNs");
        let e = d.intern("EndNs");
        let mut s = Slice::new(
            TrackId(0),
            2_678_276_061_337_000,
            1_000,
            tracex_ir::StrId::EMPTY,
        );
        s.args = vec![
            Arg {
                key: b,
                value: Value::Str("2678276061337100".into()),
            },
            Arg {
                key: e,
                value: Value::Str("2678276061337730".into()),
            },
        ];
        assert!(exact_times(&d, &mut s));
        assert_eq!((s.ts, s.dur), (2_678_276_061_337_100, Some(630)));
        // a BeginNs from another clock is left alone
        let mut t = s.clone();
        t.ts = 5_000;
        t.dur = Some(1_000);
        assert!(!exact_times(&d, &mut t));
        assert_eq!(t.ts, 5_000);
    }
}
