//! Recognising an OTF2 archive: the anchor file's magic bytes, or a directory holding one.

use std::io::Read;
use std::path::{Path, PathBuf};

use tracex_ir::{Confidence, Probe};

/// An anchor file starts with its endianness mark and "OTF2" (`03 42 'OTF2' 00` as written on
/// little-endian machines).
pub fn is_anchor(head: &[u8]) -> bool {
    head.len() >= 7 && head[0] == 0x03 && matches!(head[1], b'B' | b'L') && &head[2..7] == b"OTF2\0"
}

fn file_is_anchor(p: &Path) -> bool {
    let mut head = [0u8; 7];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && is_anchor(&head)
}

/// The anchor files directly inside `dir` (a Score-P experiment directory holds one).
pub fn anchors_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    p.extension()
                        .is_some_and(|x| x.eq_ignore_ascii_case("otf2"))
                        && p.is_file()
                })
                .filter(|p| file_is_anchor(p))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub fn sniff(probe: &Probe) -> Confidence {
    if probe.is_dir {
        return match probe.path {
            Some(dir) if !anchors_in(dir).is_empty() => Confidence::Certain,
            _ => Confidence::No,
        };
    }
    if !probe.compressed && is_anchor(probe.head) {
        Confidence::Certain
    } else {
        Confidence::No
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_and_directories() {
        assert!(is_anchor(b"\x03BOTF2\0\x03\x00"));
        assert!(!is_anchor(b"{\"traceEvents\""));
        let dir = tempfile::tempdir().unwrap();
        let probe = |p: &Path, is_dir: bool, head: &[u8]| {
            sniff(&Probe {
                path: Some(p),
                head,
                compressed: false,
                is_dir,
            })
        };
        assert_eq!(probe(dir.path(), true, b""), Confidence::No);
        std::fs::write(dir.path().join("traces.otf2"), b"\x03BOTF2\0rest").unwrap();
        assert_eq!(probe(dir.path(), true, b""), Confidence::Certain);
        assert_eq!(anchors_in(dir.path()).len(), 1);
        assert_eq!(
            probe(&dir.path().join("traces.otf2"), false, b"\x03BOTF2\0rest"),
            Confidence::Certain
        );
        assert_eq!(
            probe(&dir.path().join("x.json"), false, b"[{}]"),
            Confidence::No
        );
    }
}
