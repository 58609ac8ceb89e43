//! Diagnostics: data problems that do not stop a conversion are counted by kind, with the
//! location of the first occurrence, and summarised at the end. Each format crate declares its
//! kinds as `static` [`DiagKind`]s and lists them in a `DIAGNOSTICS` slice for the docs.

use std::collections::BTreeMap;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Normal for this kind of input; nothing was lost (an async overlap laid out on a lane).
    Info,
    /// Something in the input could not be carried over exactly; see the help text.
    Warning,
    /// The input is malformed here; `--strict` turns this into a failure.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// One kind of diagnostic: a stable name (`chrome_unmatched_end`), how bad it is, what it means.
#[derive(Debug)]
pub struct DiagKind {
    pub name: &'static str,
    pub severity: Severity,
    pub help: &'static str,
}

/// Where in the input something was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// Byte offset in the (decompressed) input.
    Byte(u64),
    /// 1-based line number.
    Line(u64),
    /// A row of a database table.
    Row {
        table: String,
        rowid: i64,
    },
    /// 0-based index of an event in the input's event list.
    Event(u64),
    /// A file (for multi-file inputs).
    File(String),
    Nowhere,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Byte(b) => write!(f, "byte {b}"),
            Location::Line(l) => write!(f, "line {l}"),
            Location::Row { table, rowid } => write!(f, "table {table}, rowid {rowid}"),
            Location::Event(i) => write!(f, "event #{i}"),
            Location::File(p) => write!(f, "{p}"),
            Location::Nowhere => f.write_str("(no location)"),
        }
    }
}

/// The count and first occurrence of one kind.
#[derive(Clone, Debug)]
pub struct DiagEntry {
    pub kind: &'static DiagKind,
    pub count: u64,
    pub first: Location,
    pub detail: Option<String>,
}

/// All diagnostics of one conversion, by kind name.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics {
    entries: BTreeMap<&'static str, DiagEntry>,
}

impl Diagnostics {
    /// Counts one occurrence.
    pub fn record(&mut self, kind: &'static DiagKind, at: Location) {
        self.record_n(kind, 1, at, None::<String>)
    }

    /// Counts one occurrence with a short explanation kept for the first one.
    pub fn record_detail(
        &mut self,
        kind: &'static DiagKind,
        at: Location,
        detail: impl Into<String>,
    ) {
        self.record_n(kind, 1, at, Some(detail.into()))
    }

    /// Counts `n` occurrences at once (a whole table skipped, say).
    pub fn record_n(
        &mut self,
        kind: &'static DiagKind,
        n: u64,
        at: Location,
        detail: Option<impl Into<String>>,
    ) {
        if n == 0 {
            return;
        }
        let e = self.entries.entry(kind.name).or_insert_with(|| DiagEntry {
            kind,
            count: 0,
            first: at,
            detail: detail.map(Into::into),
        });
        e.count += n;
    }

    pub fn get(&self, name: &str) -> Option<&DiagEntry> {
        self.entries.get(name)
    }

    pub fn count(&self, name: &str) -> u64 {
        self.entries.get(name).map_or(0, |e| e.count)
    }

    /// Entries sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &DiagEntry> {
        self.entries.values()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The number of occurrences at `Severity::Error`.
    pub fn errors(&self) -> u64 {
        self.entries
            .values()
            .filter(|e| e.kind.severity == Severity::Error)
            .map(|e| e.count)
            .sum()
    }

    /// Adds another set (from a second input) into this one.
    pub fn merge(&mut self, other: &Diagnostics) {
        for e in other.iter() {
            self.record_n(e.kind, e.count, e.first.clone(), e.detail.clone());
        }
    }
}

/// Diagnostics raised by the adapters of this crate.
pub mod kinds {
    use super::{DiagKind, Severity};

    pub static SLICE_PARTIAL_OVERLAP: DiagKind = DiagKind {
        name: "slice_partial_overlap",
        severity: Severity::Warning,
        help: "a slice started inside another on the same thread or stream but ended after it; it was moved to an overflow track instead of being clipped",
    };
    pub static ASYNC_OVERLAP_LANE: DiagKind = DiagKind {
        name: "async_overlap_lane",
        severity: Severity::Info,
        help: "async ranges on one track overlapped without nesting; the later one was laid out on an extra lane of that track",
    };
    pub static SLICE_NEGATIVE_DURATION: DiagKind = DiagKind {
        name: "slice_negative_duration",
        severity: Severity::Error,
        help: "a slice ended before it started; its duration was set to 0 and the original end kept in args",
    };
    pub static OPEN_SLICE: DiagKind = DiagKind {
        name: "slice_never_ended",
        severity: Severity::Warning,
        help: "a slice was begun but its end is not in the input; it is kept as an open slice (exporters that need an end close it at the end of the trace)",
    };
    pub static FLOW_ID_RENUMBERED: DiagKind = DiagKind {
        name: "flow_id_renumbered",
        severity: Severity::Info,
        help: "a flow's id from the input was already taken by another flow of the trace (an id its producer reused, or the same id in two merged inputs); the flow got a new id from 2^32 up, every other flow kept its own",
    };
    pub static FLOW_END_FIRST_AT_SAME_TIME: DiagKind = DiagKind {
        name: "flow_end_first_at_same_time",
        severity: Severity::Info,
        help: "a flow's end came before its start in the file, both at the same timestamp (Kineto writes some); they were paired as one flow",
    };

    pub static ALL: &[&DiagKind] = &[
        &SLICE_PARTIAL_OVERLAP,
        &ASYNC_OVERLAP_LANE,
        &SLICE_NEGATIVE_DURATION,
        &OPEN_SLICE,
        &FLOW_ID_RENUMBERED,
        &FLOW_END_FIRST_AT_SAME_TIME,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_first_location_and_counts() {
        let mut d = Diagnostics::default();
        d.record(&kinds::SLICE_PARTIAL_OVERLAP, Location::Event(3));
        d.record(&kinds::SLICE_PARTIAL_OVERLAP, Location::Event(9));
        d.record(&kinds::SLICE_NEGATIVE_DURATION, Location::Line(2));
        assert_eq!(d.count("slice_partial_overlap"), 2);
        assert_eq!(
            d.get("slice_partial_overlap").unwrap().first,
            Location::Event(3)
        );
        assert_eq!(d.errors(), 1);
    }
}
