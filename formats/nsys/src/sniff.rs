//! Recognising an nsys export: the SQLite magic makes it plausible; the schema (a `StringIds`
//! table and a table only nsys writes) makes it certain.

use std::path::Path;

use tracex_ir::{Confidence, Probe};

use crate::db::{self, Schema};

const MAGIC: &[u8] = b"SQLite format 3\0";

/// Tables of which any one, next to `StringIds`, marks an nsys export.
const NSYS_TABLES: &[&str] = &[
    "NVTX_EVENTS",
    "OSRT_API",
    "COMPOSITE_EVENTS",
    "SCHED_EVENTS",
    "TARGET_INFO_SESSION_START_TIME",
    "META_DATA_EXPORT",
    "EXPORT_META_DATA",
    "ThreadNames",
];

pub fn sniff(probe: &Probe) -> Confidence {
    if probe.is_dir || !probe.head.starts_with(MAGIC) {
        return Confidence::No;
    }
    match probe.path {
        Some(p) if !probe.compressed && is_nsys_schema(p) => Confidence::Certain,
        Some(_) if !probe.compressed => Confidence::Maybe(30),
        // stdin or gzip: the file is not at hand yet; SQLite is plausible.
        _ => Confidence::Maybe(60),
    }
}

/// Whether the file at `path` has the tables of an nsys export (read-only probe).
pub fn is_nsys_schema(path: &Path) -> bool {
    let Ok(conn) = db::open(path) else {
        return false;
    };
    let Ok(schema) = Schema::probe(&conn, &db::path_location(path)) else {
        return false;
    };
    is_nsys(&schema)
}

pub fn is_nsys(schema: &Schema) -> bool {
    schema.has_table("StringIds")
        && (NSYS_TABLES.iter().any(|t| schema.has_table(t))
            || schema
                .names()
                .any(|n| n.to_ascii_uppercase().starts_with("CUPTI_ACTIVITY_KIND_")))
}
