//! Accounting: which tables of the file tracex reads, and a count of the rows of every other
//! table, so that nothing is left out silently.

use rusqlite::Connection;
use tracex_ir::{Diagnostics, Location, Result};

use crate::db::Schema;

/// Tables read for names, metadata and lookups.
const DEFINITIONS: &[&str] = &[
    "StringIds",
    "ThreadNames",
    "PROCESSES",
    "MPI_RANKS",
    "TARGET_INFO_GPU",
    "TARGET_INFO_CUDA_GPU",
    "TARGET_INFO_SESSION_START_TIME",
    "TARGET_INFO_SYSTEM_ENV",
    "TARGET_INFO_NVTX_CUDA_STREAM",
    "TARGET_INFO_CUDA_STREAM",
    "TARGET_INFO_CUDA_DEVICE",
    "ProcessStreams",
    "TARGET_INFO_CUDA_CONTEXT_INFO",
    "TARGET_INFO_CUDA_NULL_STREAM",
    "TARGET_INFO_GPU_METRICS",
    "META_DATA_EXPORT",
    "EXPORT_META_DATA",
    "CUDA_CALLCHAINS",
    "OSRT_CALLCHAINS",
    "SAMPLING_CALLCHAINS",
    "UnwindMethodType",
];

/// Event tables not described by a table spec.
const EVENTS: &[&str] = &[
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
    "NVTX_EVENTS",
    "COMPOSITE_EVENTS",
    "SCHED_EVENTS",
    "GPU_METRICS",
    "CUDA_GPU_MEMORY_USAGE_EVENTS",
];

fn read_by_tracex(schema: &Schema, actual: &str) -> bool {
    let upper = actual.to_ascii_uppercase();
    if upper.starts_with("ENUM_") {
        return true;
    }
    let specs = crate::catalogue::CPU_TABLES
        .iter()
        .map(|t| t.table)
        .chain(crate::catalogue::GPU_TABLES.iter().map(|t| t.table))
        .chain(crate::catalogue::INSTANT_TABLES.iter().map(|t| t.table));
    DEFINITIONS
        .iter()
        .copied()
        .chain(EVENTS.iter().copied())
        .chain(specs)
        .any(|t| schema.resolve(t) == Some(actual))
}

/// Counts the rows of the tables tracex does not read (one diagnostic, the tables in its detail).
pub fn account(conn: &Connection, schema: &Schema, diag: &mut Diagnostics) -> Result<()> {
    let mut skipped: Vec<(String, u64)> = Vec::new();
    let mut names: Vec<&str> = schema.names().collect();
    names.sort_unstable();
    for name in names {
        if read_by_tracex(schema, name) {
            continue;
        }
        let Some(t) = schema.table(name) else {
            continue;
        };
        let n = crate::scan::row_count(conn, &t)?;
        if n > 0 {
            skipped.push((t.name.clone(), n));
        }
    }
    let total: u64 = skipped.iter().map(|(_, n)| n).sum();
    if total > 0 {
        let detail = skipped
            .iter()
            .map(|(t, n)| format!("{t} ({n})"))
            .collect::<Vec<_>>()
            .join(", ");
        let first = Location::Row {
            table: skipped[0].0.clone(),
            rowid: 0,
        };
        diag.record_n(&crate::diag::TABLE_NOT_IMPORTED, total, first, Some(detail));
    }
    Ok(())
}
