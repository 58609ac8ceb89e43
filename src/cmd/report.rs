//! `convert --json`: a machine-readable summary of each conversion on stdout: inputs and their
//! formats, event counts, diagnostics with the location of their first occurrence, outputs,
//! timings. One schema for a single conversion and a batch.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};
use tracex_ir::{ArgsRead, Defs, Diagnostics, Event, Location, Result, Sink};

#[derive(Serialize)]
pub struct InputReport {
    pub path: String,
    pub format: &'static str,
    /// Size on disk (`null` for stdin and folders).
    pub bytes: Option<u64>,
}

#[derive(Serialize)]
pub struct OutputReport {
    /// As given (`-` for stdout).
    pub path: String,
    pub format: &'static str,
    /// Every file the output occupies: the file, an OTF2 archive's anchor, definitions and
    /// folder, or the numbered chunks of `--split-by`.
    pub files: Vec<String>,
    pub bytes: u64,
}

#[derive(Serialize)]
pub struct Report {
    pub inputs: Vec<InputReport>,
    pub output: OutputReport,
    /// Events that reached the output, by kind, and their total.
    pub events: BTreeMap<&'static str, u64>,
    pub diagnostics: Vec<Value>,
    pub seconds: f64,
}

/// Where a diagnostic was first seen, as JSON: `{"line": 12}`, `{"table": "T", "rowid": 3}`, ...
pub fn location(l: &Location) -> Value {
    match l {
        Location::Byte(b) => json!({ "byte": b }),
        Location::Line(n) => json!({ "line": n }),
        Location::Row { table, rowid } => json!({ "table": table, "rowid": rowid }),
        Location::Event(i) => json!({ "event": i }),
        Location::File(f) => json!({ "file": f }),
        Location::Nowhere => Value::Null,
    }
}

pub fn diagnostics(diag: &Diagnostics) -> Vec<Value> {
    diag.iter()
        .map(|d| {
            json!({
                "name": d.kind.name,
                "severity": d.kind.severity.to_string(),
                "count": d.count,
                "first": location(&d.first),
                "detail": d.detail,
                "help": d.kind.help,
            })
        })
        .collect()
}

/// The whole summary: every conversion, the inputs that failed, files skipped.
pub fn print(reports: &[Report], failures: &[(String, String)], skipped: usize, seconds: f64) {
    let v = json!({
        "tracex": env!("CARGO_PKG_VERSION"),
        "conversions": reports,
        "failures": failures
            .iter()
            .map(|(input, error)| json!({ "input": input, "error": error }))
            .collect::<Vec<_>>(),
        "skipped": skipped,
        "seconds": seconds,
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&v).expect("JSON of plain values")
    );
}

/// A sink that counts what passes to the one behind it.
pub struct Counting<'a> {
    pub inner: &'a mut dyn Sink,
    /// Events by [`Event::kind_index`].
    counts: [u64; 5],
}

/// The report's names of the kinds, by [`Event::kind_index`].
const COUNTED: [&str; 5] = ["slices", "instants", "counters", "flows", "samples"];

impl<'a> Counting<'a> {
    pub fn new(inner: &'a mut dyn Sink) -> Self {
        Counting {
            inner,
            counts: [0; 5],
        }
    }

    /// Counts of the kinds that occurred, with `total`.
    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        let mut c: BTreeMap<_, _> = (COUNTED.iter().zip(self.counts))
            .filter(|&(_, n)| n > 0)
            .map(|(&k, n)| (k, n))
            .collect();
        c.insert("total", self.counts.iter().sum());
        c
    }
}

impl Sink for Counting<'_> {
    fn event(&mut self, defs: &Defs, diag: &mut Diagnostics, e: Event) -> Result<()> {
        self.counts[e.kind_index()] += 1;
        self.inner.event(defs, diag, e)
    }

    fn finish(&mut self, defs: &Defs, diag: &mut Diagnostics) -> Result<()> {
        self.inner.finish(defs, diag)
    }

    fn args_read(&self) -> ArgsRead {
        self.inner.args_read()
    }

    fn unordered(&mut self) -> bool {
        self.inner.unordered()
    }

    fn begin_input(&mut self) {
        self.inner.begin_input()
    }

    fn offsets(&mut self, offsets: &[i64]) {
        self.inner.offsets(offsets)
    }
}
