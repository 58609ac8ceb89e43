//! A progress counter an importer advances and the CLI may show; cheap enough to update often.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What a progress counter counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    /// Rows of a database (nsys).
    Rows,
}

#[derive(Debug, Default)]
pub struct Progress {
    done: AtomicU64,
    total: AtomicU64,
    rows: AtomicBool,
    shown: AtomicBool,
}

impl Progress {
    pub fn new() -> Progress {
        Progress::default()
    }

    /// Sets the amount of work expected (bytes, rows); 0 = unknown.
    pub fn set_total(&self, total: u64) {
        self.total.store(total, Ordering::Relaxed);
    }

    pub fn add_total(&self, n: u64) {
        self.total.fetch_add(n, Ordering::Relaxed);
    }

    pub fn set_done(&self, done: u64) {
        self.done.store(done, Ordering::Relaxed);
    }

    pub fn advance(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Says what `done` and `total` count (bytes unless set).
    pub fn set_unit(&self, unit: Unit) {
        self.rows.store(unit == Unit::Rows, Ordering::Relaxed);
    }

    pub fn unit(&self) -> Unit {
        if self.rows.load(Ordering::Relaxed) {
            Unit::Rows
        } else {
            Unit::Bytes
        }
    }

    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Marks the counter as shown to someone (a progress bar), before the import starts.
    pub fn set_shown(&self) {
        self.shown.store(true, Ordering::Relaxed);
    }

    /// Whether anyone sees this counter: an importer may skip a total that costs work
    /// (counting a database's rows) when no one does.
    pub fn is_shown(&self) -> bool {
        self.shown.load(Ordering::Relaxed)
    }
}
