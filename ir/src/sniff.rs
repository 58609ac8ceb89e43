//! Content sniffing: each format looks at the start of an input and says how sure it is.

use std::path::Path;

/// How sure a format is that an input is its own. Ordered: `No < Maybe(_) < Certain`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Confidence {
    No,
    /// Plausible; higher is surer (0–100).
    Maybe(u8),
    Certain,
}

/// What a sniffer sees: the input's path (if any) and its first bytes after decompression.
#[derive(Clone, Copy, Debug)]
pub struct Probe<'a> {
    pub path: Option<&'a Path>,
    /// Up to 64 KiB from the start, decompressed when `compressed`.
    pub head: &'a [u8],
    /// The input was gzip-compressed.
    pub compressed: bool,
    /// The input is a directory (OTF2 archives, Score-P output).
    pub is_dir: bool,
}

impl<'a> Probe<'a> {
    /// A probe of bytes alone: no path, not compressed, not a directory (for sniffer tests).
    pub fn of_bytes(head: &'a [u8]) -> Probe<'a> {
        Probe {
            path: None,
            head,
            compressed: false,
            is_dir: false,
        }
    }

    /// The head as text up to the last complete UTF-8 character, if it is text at all.
    pub fn text(&self) -> Option<&str> {
        match std::str::from_utf8(self.head) {
            Ok(s) => Some(s),
            Err(e) if e.error_len().is_none() => {
                Some(std::str::from_utf8(&self.head[..e.valid_up_to()]).expect("valid prefix"))
            }
            Err(_) => None,
        }
    }

    /// Whether the file name ends with one of `exts` (case-insensitive), for tie-breaking.
    pub fn has_extension(&self, exts: &[&str]) -> bool {
        let Some(name) = self.path.and_then(|p| p.file_name()) else {
            return false;
        };
        let name = name.to_string_lossy().to_ascii_lowercase();
        exts.iter().any(|e| name.ends_with(&e.to_ascii_lowercase()))
    }
}
