//! Diagnostics: data problems that do not stop a conversion are counted by kind, with the
//! location of the first occurrence, and summarised at the end. Each crate declares its kinds
//! with [`kinds!`](crate::kinds): `static` [`DiagKind`]s and a `DIAGNOSTICS` slice listing
//! them for `tracex formats --diagnostics` and the docs.

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

/// Declares diagnostic kinds as `pub static` [`DiagKind`]s and lists them all in
/// `pub static DIAGNOSTICS`:
///
/// ```
/// mod diag {
///     tracex_ir::kinds! {
///         BAD_LINE = "demo_bad_line", Error, "a line could not be read; it was skipped";
///         EMPTY = "demo_empty", Info, "the input has no events";
///     }
/// }
/// assert_eq!(diag::DIAGNOSTICS.len(), 2);
/// assert_eq!(diag::BAD_LINE.severity, tracex_ir::Severity::Error);
/// ```
#[macro_export]
macro_rules! kinds {
    ($($id:ident = $name:literal, $sev:ident, $help:literal;)*) => {
        $(pub static $id: $crate::DiagKind = $crate::DiagKind {
            name: $name,
            severity: $crate::Severity::$sev,
            help: $help,
        };)*
        /// Every diagnostic declared here.
        pub static DIAGNOSTICS: &[&$crate::DiagKind] = &[$(&$id),*];
    };
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
    crate::kinds! {
        SLICE_PARTIAL_OVERLAP = "slice_partial_overlap", Warning,
            "a slice started inside another on the same thread or stream but ended after it; it was moved to an overflow track instead of being clipped";
        ASYNC_OVERLAP_LANE = "async_overlap_lane", Info,
            "async ranges on one track overlapped without nesting; the later one was laid out on an extra lane of that track";
        SLICE_NEGATIVE_DURATION = "slice_negative_duration", Error,
            "a slice ended before it started; its duration was set to 0 and the original end kept in args";
        OPEN_SLICE = "slice_never_ended", Warning,
            "a slice was begun but its end is not in the input; it is kept as an open slice (exporters that need an end close it at the end of the trace)";
        FLOW_ID_RENUMBERED = "flow_id_renumbered", Info,
            "a flow's id from the input was already taken by another flow of the trace (an id its producer reused, or the same id in two merged inputs); the flow got a new id from 2^32 up, every other flow kept its own";
        FLOW_END_REUSED = "flow_end_after_its_flow_ended", Info,
            "a flow end or step came after its id's flow had ended (Chrome: an f or t after the f of its id, as Kineto writes for the kernels of a CUDA graph; a flow_in after its bind_id's flow ended); as Perfetto draws it, it became a new flow from the last start or step of that id";
        FLOW_END_FIRST_AT_SAME_TIME = "flow_end_first_at_same_time", Info,
            "a flow's end came before its start in the file, both at the same timestamp (Kineto writes some); they were paired as one flow";
    }
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
