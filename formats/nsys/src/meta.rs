//! Trace-level facts: the export's metadata (`META_DATA_EXPORT`, before 2023.3
//! `EXPORT_META_DATA`), a few system properties, and the session start as the clock origin.

use rusqlite::Connection;
use serde_json::{Map, Value as Json};
use tracex_ir::{Defs, Diagnostics, Location, Value};

use crate::db::{pairs, Schema};

/// System properties worth keeping (`TARGET_INFO_SYSTEM_ENV` also holds environment variables,
/// which are left out).
const SYSTEM_KEYS: &[&str] = &[
    "Hostname",
    "OsDescription",
    "HardwarePlatform",
    "CpuDescription",
    "CpuCores",
    "NvDriverVersion",
    "CudaDriverVersion",
];

pub fn load(conn: &Connection, schema: &Schema, defs: &mut Defs, diag: &mut Diagnostics) {
    let mut export = Map::new();
    for table in ["META_DATA_EXPORT", "EXPORT_META_DATA"] {
        if let Some(t) = schema.table(table) {
            for (k, v) in pairs::<String, String>(conn, &t, ("name", "value"), "1") {
                if let Some(k) = k {
                    export.insert(k, v.map_or(Json::Null, Json::String));
                }
            }
        }
    }
    let normalized = export
        .get("EXPORT_PARAM_TIME_NORMALIZE")
        .and_then(Json::as_str)
        == Some("true");
    let shifted = ["EXPORT_PARAM_TIME_SHIFT", "EXPORT_CONFIG_TIME_SHIFT"]
        .iter()
        .filter_map(|k| export.get(*k).and_then(Json::as_str))
        .any(|v| v.trim() != "0" && !v.trim().is_empty());
    if normalized || shifted {
        diag.record(&crate::diag::TIME_NORMALIZED, Location::Nowhere);
    }
    if !export.is_empty() {
        defs.set_meta(
            "nsys_export",
            Value::Json(Json::Object(export).to_string().into()),
        );
    }
    if let Some(t) = schema.table("TARGET_INFO_SYSTEM_ENV") {
        let mut system = Map::new();
        for (k, v) in pairs::<String, String>(conn, &t, ("name", "value"), "1") {
            if let Some(k) = k.filter(|k| SYSTEM_KEYS.contains(&k.as_str())) {
                system.insert(k, v.map_or(Json::Null, Json::String));
            }
        }
        if !system.is_empty() {
            defs.set_meta(
                "nsys_system",
                Value::Json(Json::Object(system).to_string().into()),
            );
        }
    }
    if let Some(t) = schema.table("TARGET_INFO_SESSION_START_TIME") {
        let sql = format!(
            "SELECT {}, {} FROM {}",
            t.col("utcEpochNs"),
            t.col("utcTime"),
            t.sql_name()
        );
        if let Ok((ns, utc)) = conn.query_row(&sql, [], |r| {
            Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<String>>(1)?))
        }) {
            defs.clock.origin_unix_ns = ns;
            if let Some(u) = utc {
                defs.set_meta("nsys_session_start_utc", Value::str(u));
            }
        }
    }
}
