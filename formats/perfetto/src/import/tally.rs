//! Counts of skipped things by kind, reported as one diagnostic each.

use std::collections::BTreeMap;

use tracex_ir::{Diagnostics, Location};

/// Counts by kind, reported as one diagnostic whose detail lists them.
#[derive(Default)]
pub(crate) struct Tally {
    counts: BTreeMap<String, u64>,
    first: Option<Location>,
}

impl Tally {
    pub fn add(&mut self, kind: impl Into<String>, at: Location) {
        *self.counts.entry(kind.into()).or_insert(0) += 1;
        self.first.get_or_insert(at);
    }

    pub fn record(self, diag: &mut Diagnostics, kind: &'static tracex_ir::DiagKind) {
        let total: u64 = self.counts.values().sum();
        let detail = self
            .counts
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        diag.record_n(
            kind,
            total,
            self.first.unwrap_or(Location::Nowhere),
            Some(detail),
        );
    }
}
