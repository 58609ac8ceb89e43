//! Diagnostics of the nsys importer (listed in `docs/formats/nsys.md`), and how a row or a run
//! of rows is recorded in them.

tracex_ir::kinds! {
    BAD_VALUE = "nsys_bad_value", Error,
        "a row holds a value of the wrong type in a column tracex needs (text where a timestamp or id belongs); the row was skipped";
    MISSING_ID = "nsys_missing_global_id", Error,
        "a row has no globalTid/globalPid, so it belongs to no thread or process; it was skipped";
    UNKNOWN_STRING = "nsys_unknown_string_id", Warning,
        "a name id is not in StringIds; the name is shown as \"[string N]\"";
    TABLE_UNUSABLE = "nsys_table_unusable", Error,
        "a table lacks a column tracex needs (such as start); its rows were skipped (detail: table and column)";
    TABLE_NOT_IMPORTED = "nsys_table_not_imported", Info,
        "rows of tables tracex does not map to the IR (detail: the tables and their row counts; see docs/formats/nsys.md)";
    BACKTRACE_ROW = "nsys_cuda_backtrace_row", Info,
        "a CUDA API row of eventClass 67 (CUDABACKTRACE) duplicates a call to carry its backtrace; the backtrace became the stack of the call with the same thread and correlation id, the duplicate row was dropped";
    LAUNCH_NOT_FOUND = "nsys_launch_not_in_capture", Info,
        "GPU work whose correlation id matches no CUDA API call of its process before it (launched before the capture or the exported window began); kept without a flow";
    DUPLICATE_CORRELATION = "nsys_duplicate_correlation", Warning,
        "several CUDA API calls of one process share a correlation id; only the first one got a flow to the GPU work";
    NVTX_DEFINITION_ROW = "nsys_nvtx_definition_row", Info,
        "an NVTX row that names something (domain create/destroy 75/76, category 33, thread name 39) became a definition, not an event";
    NVTX_UNKNOWN_TYPE = "nsys_nvtx_unknown_event_type", Warning,
        "an NVTX row has an eventType tracex does not know; it was dropped";
    CUDA_EVENT_WITHOUT_TIME = "nsys_cuda_event_without_time", Info,
        "a CUDA event row has no completion timestamp (0 or no timestamp column: nsys did not collect it), so it has no place in time; it was not imported";
    SAMPLE_FIELDS_DROPPED = "nsys_sample_fields_dropped", Info,
        "CPU samples keep their thread, time, CPU and stack; their thread state and cycle count are not carried (IR samples have no arguments)";
    TIME_NORMALIZED = "nsys_time_normalized", Warning,
        "the export was made with --ts-normalize or a time shift; timestamps are not on the capture's own clock, so the clock origin may not match";
    UNKNOWN_METRIC = "nsys_unknown_gpu_metric", Warning,
        "a GPU_METRICS row names a metric that TARGET_INFO_GPU_METRICS does not define; it is shown as \"metric N\"";
}

use tracex_ir::{DiagKind, Diagnostics, Location};

use crate::decoded::Skip;

/// Where row `rowid` of `table` is, for diagnostics.
pub fn row_at(table: &str, rowid: i64) -> impl Fn() -> Location + Copy + '_ {
    move || Location::Row {
        table: table.to_string(),
        rowid,
    }
}

/// Records `kind` for `n` rows of `table`, the first of which is `first`.
pub fn record_rows(
    diag: &mut Diagnostics,
    kind: &'static DiagKind,
    table: &str,
    (n, first): (u64, i64),
    detail: Option<String>,
) {
    diag.record_n(kind, n, row_at(table, first)(), detail);
}

/// Counts a skipped row.
pub fn record_skip(diag: &mut Diagnostics, table: &str, rowid: i64, why: &Skip) {
    let at = row_at(table, rowid)();
    match why {
        Skip::Bad(b) => diag.record_detail(&BAD_VALUE, at, b.describe()),
        Skip::NoId(col) => diag.record_detail(&MISSING_ID, at, format!("{col} is NULL")),
        Skip::Fatal(_) => {}
    }
}
