//! Recognising Chrome JSON from its first bytes.

use tracex_ir::{Confidence, Probe};

/// `{"` or `[{` after whitespace is likely (as Perfetto sniffs); `"traceEvents"` or a `"ph"` key
/// near the start makes it certain.
pub fn sniff(probe: &Probe) -> Confidence {
    if probe.is_dir {
        return Confidence::No;
    }
    let head = probe.head;
    let start = head
        .iter()
        .position(|b| !b" \t\r\n".contains(b))
        .unwrap_or(head.len());
    let rest = &head[start..];
    let skip_ws = |s: &[u8]| {
        let i = s
            .iter()
            .position(|b| !b" \t\r\n".contains(b))
            .unwrap_or(s.len());
        s[i..].to_vec()
    };
    let plausible = match rest.first() {
        Some(b'{') => {
            let after = skip_ws(&rest[1..]);
            after.first() == Some(&b'"') || after.first() == Some(&b'}')
        }
        Some(b'[') => {
            let after = skip_ws(&rest[1..]);
            matches!(after.first(), Some(b'{') | Some(b']') | None)
        }
        _ => false,
    };
    if !plausible {
        return Confidence::No;
    }
    let has = |needle: &[u8]| memchr::memmem::find(rest, needle).is_some();
    if has(b"\"traceEvents\"") || has(b"\"ph\"") {
        Confidence::Certain
    } else {
        Confidence::Maybe(40)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(s: &str) -> Confidence {
        sniff(&Probe {
            path: None,
            head: s.as_bytes(),
            compressed: false,
            is_dir: false,
        })
    }

    #[test]
    fn forms() {
        assert_eq!(probe(" {\"traceEvents\":[]}"), Confidence::Certain);
        assert_eq!(probe("[{\"ph\":\"X\""), Confidence::Certain);
        assert_eq!(probe("[\n{\"name\":\"a\""), Confidence::Maybe(40));
        assert_eq!(probe("[]"), Confidence::Maybe(40));
        assert_eq!(probe("main;foo 1\n"), Confidence::No);
        assert_eq!(probe("SQLite format 3\0"), Confidence::No);
        assert_eq!(probe(""), Confidence::No);
    }
}
