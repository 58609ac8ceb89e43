//! Diagnostics counted where they arise and recorded once: a kind that can occur on every
//! record (a million kernels) would otherwise update the diagnostics map a million times.

use tracex_ir::{DiagKind, ImportCtx, Location};

/// How an importer's positions become locations (`Location::Event`, `Location::Line`).
pub type Loc = fn(u64) -> Location;

/// The count and first occurrence (in input order) of one diagnostic kind.
#[derive(Default)]
pub struct Tally {
    count: u64,
    first: Option<(u64, Option<String>)>,
}

impl Tally {
    /// One occurrence at input position `at`; `detail` is asked for only when it is the first.
    pub fn add(&mut self, at: u64, detail: impl FnOnce() -> Option<String>) {
        self.count += 1;
        if self.first.as_ref().is_none_or(|f| at < f.0) {
            self.first = Some((at, detail()));
        }
    }

    /// Records the count, at the first occurrence, if there was any.
    pub fn record(self, ctx: &mut ImportCtx, kind: &'static DiagKind, loc: Loc) {
        if let Some((at, detail)) = self.first {
            ctx.diag.record_n(kind, self.count, loc(at), detail);
        }
    }
}
