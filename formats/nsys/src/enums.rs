//! Labels of the enumerations nsys stores as integers (`copyKind`, `syncType`, ...). Files of
//! schema 3.0 and later carry them in `ENUM_*` tables; older files have none, so the values
//! tracex needs are built in (from the tables of later exports) and used as a fallback.

use rusqlite::Connection;
use rustc_hash::FxHashMap;

use crate::db::{pairs, Schema};

/// The enumerations tracex reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Enum {
    MemcpyOper,
    MemKind,
    SyncType,
    EventClass,
    LaunchType,
    CacheConfig,
    ThreadState,
    UnifMemAccess,
    UnifMemMigration,
    DevMemOper,
    MemPoolOper,
    MemPoolType,
    DiagSeverity,
    OverheadType,
    StreamType,
}

impl Enum {
    fn table(self) -> &'static str {
        match self {
            Enum::MemcpyOper => "ENUM_CUDA_MEMCPY_OPER",
            Enum::MemKind => "ENUM_CUDA_MEM_KIND",
            Enum::SyncType => "ENUM_CUPTI_SYNC_TYPE",
            Enum::EventClass => "ENUM_NSYS_EVENT_CLASS",
            Enum::LaunchType => "ENUM_CUDA_KERNEL_LAUNCH_TYPE",
            Enum::CacheConfig => "ENUM_CUDA_FUNC_CACHE_CONFIG",
            Enum::ThreadState => "ENUM_SAMPLING_THREAD_STATE",
            Enum::UnifMemAccess => "ENUM_CUDA_UNIF_MEM_ACCESS_TYPE",
            Enum::UnifMemMigration => "ENUM_CUDA_UNIF_MEM_MIGRATION",
            Enum::DevMemOper => "ENUM_CUDA_DEV_MEM_EVENT_OPER",
            Enum::MemPoolOper => "ENUM_CUDA_MEMPOOL_OPER",
            Enum::MemPoolType => "ENUM_CUDA_MEMPOOL_TYPE",
            Enum::DiagSeverity => "ENUM_DIAGNOSTIC_SEVERITY_LEVEL",
            Enum::OverheadType => "ENUM_CUPTI_OVERHEAD_TYPE",
            Enum::StreamType => "ENUM_CUPTI_STREAM_TYPE",
        }
    }

    fn builtin(self) -> &'static [(i64, &'static str)] {
        match self {
            Enum::MemcpyOper => &[
                (0, "Unknown"),
                (1, "Host-to-Device"),
                (2, "Device-to-Host"),
                (3, "Host-to-Array"),
                (4, "Array-to-Host"),
                (5, "Array-to-Array"),
                (6, "Array-to-Device"),
                (7, "Device-to-Array"),
                (8, "Device-to-Device"),
                (9, "Host-to-Host"),
                (10, "Peer-to-Peer"),
                (11, "Unified Host-to-Device"),
                (12, "Unified Device-to-Host"),
                (13, "Unified Device-to-Device"),
            ],
            Enum::MemKind => &[
                (0, "Pageable"),
                (1, "Pinned"),
                (2, "Device"),
                (3, "Array"),
                (4, "Managed"),
                (5, "Device Static"),
                (6, "Managed Static"),
                (7, "Unknown"),
            ],
            Enum::SyncType => &[
                (0, "Unknown"),
                (1, "Event sync"),
                (2, "Stream wait sync"),
                (3, "Stream sync"),
                (4, "Context sync"),
            ],
            Enum::EventClass => &[
                (0, "CUDA runtime"),
                (1, "CUDA driver"),
                (27, "OSRT runtime"),
                (28, "cuDNN"),
                (29, "cuBLAS"),
                (31, "OSRT start"),
                (32, "OSRT finish"),
                (48, "OpenACC"),
                (67, "CUDA backtrace"),
            ],
            Enum::LaunchType => &[
                (0, "Unknown"),
                (1, "Regular"),
                (2, "Coop Single Device"),
                (3, "Coop Multi Device"),
            ],
            Enum::CacheConfig => &[(0, "None"), (1, "Shared"), (2, "L1"), (3, "Equal")],
            Enum::ThreadState => &[
                (0, "Unknown"),
                (1, "Running"),
                (2, "Interruptible"),
                (3, "Uninterruptible"),
                (4, "Stopped"),
                (5, "Terminated"),
                (6, "Unscheduled"),
                (7, "Waiting"),
                (8, "OS runtime"),
                (9, "Initialized"),
                (10, "Transition"),
            ],
            Enum::UnifMemAccess => &[
                (0, "Unknown"),
                (1, "Read"),
                (2, "Write"),
                (3, "Atomic"),
                (4, "Prefetch"),
            ],
            Enum::UnifMemMigration => &[
                (0, "Unknown"),
                (1, "User prefetch"),
                (2, "Page fault"),
                (3, "Speculative prefetch"),
                (4, "Eviction"),
                (5, "Access counters"),
            ],
            Enum::DevMemOper => &[(0, "Allocation"), (1, "Deallocation")],
            Enum::MemPoolOper => &[
                (0, "Invalid"),
                (1, "Created"),
                (2, "Destroyed"),
                (3, "Trimmed"),
            ],
            Enum::MemPoolType => &[(0, "Invalid"), (1, "Local"), (2, "Imported")],
            Enum::DiagSeverity => &[
                (0, "Unknown"),
                (1, "Info"),
                (2, "Warning"),
                (3, "Error"),
                (4, "Verbose"),
            ],
            Enum::OverheadType => &[
                (0, "Undefined"),
                (1, "Unknown"),
                (2, "Driver JIT compiler (CUDA)"),
                (3, "Buffer flush (Profiler)"),
                (4, "Instrumentation (Profiler)"),
                (5, "Resource creation/destruction (Profiler)"),
                (6, "Runtime module loading (CUDA)"),
                (7, "Lazy function loading (CUDA)"),
                (8, "Command buffer full (CUDA)"),
            ],
            Enum::StreamType => &[
                (0, "Unknown stream type"),
                (1, "Default stream"),
                (2, "Non-blocking stream"),
                (3, "Null stream"),
            ],
        }
    }

    const ALL: [Enum; 15] = [
        Enum::MemcpyOper,
        Enum::MemKind,
        Enum::SyncType,
        Enum::EventClass,
        Enum::LaunchType,
        Enum::CacheConfig,
        Enum::ThreadState,
        Enum::UnifMemAccess,
        Enum::UnifMemMigration,
        Enum::DevMemOper,
        Enum::MemPoolOper,
        Enum::MemPoolType,
        Enum::DiagSeverity,
        Enum::OverheadType,
        Enum::StreamType,
    ];
}

/// Enum labels from the file, falling back to the built-in tables.
#[derive(Debug, Default)]
pub struct Enums {
    from_file: FxHashMap<(Enum, i64), Box<str>>,
}

impl Enums {
    /// Reads the file's `ENUM_*` tables that tracex uses (unreadable ones are ignored: the
    /// built-in labels serve instead).
    pub fn load(conn: &Connection, schema: &Schema) -> Enums {
        let mut from_file = FxHashMap::default();
        for e in Enum::ALL {
            let Some(t) = schema.table(e.table()) else {
                continue;
            };
            let label = if t.has("label") { "label" } else { "name" };
            for (id, label) in pairs::<i64, String>(conn, &t, ("id", label), "1") {
                if let (Some(id), Some(label)) = (id, label) {
                    from_file.insert((e, id), label.into_boxed_str());
                }
            }
        }
        Enums { from_file }
    }

    /// The label of `value`, or `None` when neither the file nor tracex knows it.
    pub fn label(&self, e: Enum, value: i64) -> Option<&str> {
        if let Some(l) = self.from_file.get(&(e, value)) {
            return Some(l);
        }
        e.builtin()
            .iter()
            .find(|(v, _)| *v == value)
            .map(|(_, l)| *l)
    }

    /// The label, or the number as text.
    pub fn label_or_number(&self, e: Enum, value: i64) -> String {
        match self.label(e, value) {
            Some(l) => l.to_string(),
            None => value.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_labels_win_and_builtins_fill_in() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE ENUM_CUPTI_SYNC_TYPE (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
             INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (3, 'X', 'Stream synchronize (file)');",
        )
        .unwrap();
        let schema = Schema::probe(&conn, &tracex_ir::Location::Nowhere).unwrap();
        let e = Enums::load(&conn, &schema);
        assert_eq!(
            e.label(Enum::SyncType, 3),
            Some("Stream synchronize (file)")
        );
        assert_eq!(e.label(Enum::SyncType, 4), Some("Context sync"));
        assert_eq!(e.label(Enum::MemcpyOper, 1), Some("Host-to-Device"));
        assert_eq!(e.label_or_number(Enum::MemcpyOper, 99), "99");
    }
}
