//! GPU work on per-device, per-stream tracks: kernels, memory copies and sets, synchronization,
//! CUDA graph launches (graph-mode tracing), and CUDA event completions.

use crate::db::Row;
use tracex_ir::{Arg, Args, Defs, Location, Result, StrId, Value};

use crate::db::{rowid, Cols};
use crate::enums::Enum;
use crate::identity::GlobalId;
use crate::importer::{record_rows, row_at, Decoded, Hook, Importer, Parts, Skip};
use crate::options::Activity;
use crate::plan::usable;
use crate::plan::{order_by, range_order, rows_where, Kind, Query, Setup, StreamDef};

/// Flow sources: GPU tables whose rows refer to the API call that launched them.
pub const SRC_KERNEL: u8 = 0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuKind {
    Kernel,
    Memcpy,
    Memset,
    Sync,
    Graph,
}

#[derive(Debug)]
pub struct GpuTable {
    pub table: &'static str,
    pub activity: Activity,
    /// Index among flow sources.
    pub src: u8,
    pub kind: GpuKind,
}

pub static GPU_TABLES: &[GpuTable] = &[
    GpuTable {
        table: "CUPTI_ACTIVITY_KIND_KERNEL",
        activity: Activity::Kernel,
        src: SRC_KERNEL,
        kind: GpuKind::Kernel,
    },
    GpuTable {
        table: "CUPTI_ACTIVITY_KIND_MEMCPY",
        activity: Activity::Memcpy,
        src: 1,
        kind: GpuKind::Memcpy,
    },
    GpuTable {
        table: "CUPTI_ACTIVITY_KIND_MEMCPY2",
        activity: Activity::Memcpy,
        src: 2,
        kind: GpuKind::Memcpy,
    },
    GpuTable {
        table: "CUPTI_ACTIVITY_KIND_MEMSET",
        activity: Activity::Memset,
        src: 3,
        kind: GpuKind::Memset,
    },
    GpuTable {
        table: "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
        activity: Activity::Sync,
        src: 4,
        kind: GpuKind::Sync,
    },
    GpuTable {
        table: "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
        activity: Activity::Graph,
        src: 5,
        kind: GpuKind::Graph,
    },
];

/// Where a row of flow source `src` is, for diagnostics.
pub fn location(src: u8, rowid: i64) -> Location {
    let table = GPU_TABLES
        .iter()
        .find(|t| t.src == src)
        .map_or("GPU activity", |t| t.table);
    Location::Row {
        table: table.to_string(),
        rowid,
    }
}

/// Columns read from every GPU table, in this order.
pub const COMMON: &[&str] = &[
    "start",
    "end",
    "deviceId",
    "contextId",
    "streamId",
    "globalPid",
    "correlationId",
    "greenContextId",
];

/// The columns of each kind after [`COMMON`].
fn specific(kind: GpuKind) -> &'static [&'static str] {
    match kind {
        GpuKind::Kernel => &[
            "shortName",
            "demangledName",
            "mangledName",
            "gridX",
            "gridY",
            "gridZ",
            "blockX",
            "blockY",
            "blockZ",
            "clusterX",
            "clusterY",
            "clusterZ",
            "registersPerThread",
            "staticSharedMemory",
            "dynamicSharedMemory",
            "sharedMemoryExecuted",
            "localMemoryPerThread",
            "localMemoryTotal",
            "launchType",
            "cacheConfig",
            "gridId",
            "graphNodeId",
            "graphId",
        ],
        GpuKind::Memcpy => &[
            "bytes",
            "copyKind",
            "srcKind",
            "dstKind",
            "srcDeviceId",
            "srcContextId",
            "dstDeviceId",
            "dstContextId",
            "migrationCause",
            "graphNodeId",
            "virtualAddress",
            "copyCount",
        ],
        GpuKind::Memset => &["bytes", "value", "memKind", "graphNodeId"],
        GpuKind::Sync => &["syncType", "eventId", "eventSyncId"],
        GpuKind::Graph => &["graphId", "graphExecId"],
    }
}

/// Streams of the GPU tables present; returns which flow sources exist.
pub fn plans(setup: &mut Setup, imp: &mut Importer) -> Result<()> {
    for spec in GPU_TABLES {
        let what = (spec.activity, spec.table);
        let needed = ["start", "deviceId", "streamId", "globalPid"];
        let Some(t) = setup.wanted(imp.opts.activities, what, &needed)? else {
            continue;
        };
        let mut cols: Vec<&str> = COMMON.to_vec();
        cols.extend_from_slice(specific(spec.kind));
        let select = format!(
            "SELECT rowid, {} FROM {}",
            t.select_list(&cols),
            t.sql_name()
        );
        let query = Query::ordered(&t, "start", Some("end"), |sorted| {
            format!("{select}{}", order_by(sorted, &range_order(&t, "")))
        });
        setup
            .streams
            .push(StreamDef::new(&t, query, Kind::Gpu(spec)));
    }
    if imp.opts.activities.contains(Activity::CudaEvent) {
        if let Some(t) = setup.schema.table("CUPTI_ACTIVITY_KIND_CUDA_EVENT") {
            cuda_event_plan(setup, &t)?;
        }
    }
    Ok(())
}

/// CUDA event completions: instants where nsys collected a timestamp (2025.5+, non-zero).
fn cuda_event_plan(setup: &mut Setup, t: &crate::db::Table) -> Result<()> {
    let (conn, diag) = (setup.conn, &mut *setup.diag);
    if !t.has("timestamp") {
        let all = rows_where(conn, t, "1")?;
        record_rows(
            diag,
            &crate::diag::CUDA_EVENT_WITHOUT_TIME,
            &t.name,
            all,
            None,
        );
        return Ok(());
    }
    let ts = t.col("timestamp");
    let untimed = rows_where(conn, t, &format!("{ts} IS NULL OR {ts} = 0"))?;
    record_rows(
        diag,
        &crate::diag::CUDA_EVENT_WITHOUT_TIME,
        &t.name,
        untimed,
        None,
    );
    let timed = crate::plan::row_count(conn, t)? - untimed.0;
    if timed == 0 || !usable(t, &["deviceId", "streamId", "globalPid"], diag, conn)? {
        return Ok(());
    }
    let select = format!(
        "SELECT rowid, {} FROM {} WHERE {ts} IS NOT NULL AND {ts} != 0",
        t.select_list(&[
            "timestamp",
            "deviceId",
            "contextId",
            "streamId",
            "globalPid",
            "correlationId",
            "eventId",
            "eventSyncId"
        ]),
        t.sql_name(),
    );
    let query = Query::ordered(t, "timestamp", None, |sorted| {
        format!("{select}{}", order_by(sorted, &format!("{ts}, rowid")))
    });
    setup
        .streams
        .push(StreamDef::new(t, query, Kind::CudaEvent));
    Ok(())
}

/// `[x,y,z]` for a grid, block or cluster shape, when its parts are there.
fn dims(c: &mut Cols) -> Option<Value> {
    let (x, y, z) = (c.raw(), c.raw(), c.raw());
    match (x, y, z) {
        (Some(Value::Int(x)), Some(Value::Int(y)), Some(Value::Int(z))) => {
            Some(Value::Json(format!("[{x},{y},{z}]").into()))
        }
        _ => None,
    }
}

impl Importer<'_> {
    pub fn decode_gpu(
        &mut self,
        spec: &GpuTable,
        table: &str,
        row: &Row,
        defs: &mut Defs,
    ) -> Decoded {
        let rid = rowid(row);
        let at = row_at(table, rid);
        let mut c = Cols::new(row);
        let start = c.int("start")?;
        let end = c.opt_int("end")?;
        let device = c.int("deviceId")?;
        let context = c.opt_int("contextId")?;
        let stream = c.int("streamId")?;
        let gpid = c.opt_int("globalPid")?;
        let Some(gpid) = gpid else {
            return Err(Skip::NoId("globalPid"));
        };
        let mut args = Args::with_capacity(16);
        if let Some(corr) = c.raw() {
            args.push(Arg {
                key: self.keys.correlation_id,
                value: corr,
            });
        }
        if let Some(ctxid) = context {
            self.arg(defs, &mut args, "context", Value::Int(ctxid));
        }
        if let Some(g) = c.raw() {
            self.arg(defs, &mut args, "green_context", g);
        }
        let track = self
            .ids
            .stream(defs, GlobalId(gpid), device, context.unwrap_or(0), stream);
        let (name, cat) = match spec.kind {
            GpuKind::Kernel => self.kernel_args(&mut c, &mut args, defs, &at),
            GpuKind::Memcpy => self.memcpy_args(&mut c, &mut args, defs, start, end),
            GpuKind::Memset => {
                self.add_args(&mut c, &mut args, defs, &[("bytes", None), ("value", None)]);
                self.add_args(
                    &mut c,
                    &mut args,
                    defs,
                    &[("mem_kind", Some(Enum::MemKind))],
                );
                self.add_args(&mut c, &mut args, defs, &[("graph_node_id", None)]);
                (defs.intern("Memset"), self.keys.cat_memset)
            }
            GpuKind::Sync => {
                let ty = c.raw();
                let name = match &ty {
                    Some(Value::Int(t)) => {
                        let label = self.enums.label_or_number(Enum::SyncType, *t);
                        self.arg(defs, &mut args, "sync_type", Value::str(label.clone()));
                        defs.intern(&label)
                    }
                    _ => defs.intern("Synchronization"),
                };
                self.add_args(
                    &mut c,
                    &mut args,
                    defs,
                    &[("event_id", None), ("event_sync_id", None)],
                );
                (name, self.keys.cat_sync)
            }
            GpuKind::Graph => {
                let graph = c.raw();
                let name = match &graph {
                    Some(Value::Int(g)) => defs.intern(&format!("CUDA graph {g}")),
                    _ => defs.intern("CUDA graph"),
                };
                if let Some(g) = graph {
                    self.arg(defs, &mut args, "graph_id", g);
                }
                self.add_args(&mut c, &mut args, defs, &[("graph_exec_id", None)]);
                (name, self.keys.cat_graph)
            }
        };
        let dur = self.duration(defs, start, end, &mut args, at);
        let parts = Parts {
            track,
            ts: start,
            name,
            cat,
            args,
        };
        Ok(Some((
            parts.slice(dur, None, None),
            Hook::Gpu {
                src: spec.src,
                rowid: rid,
            },
        )))
    }

    /// Reads the next columns as arguments `keys` (an enum label when given), skipping NULLs.
    fn add_args(
        &mut self,
        c: &mut Cols,
        args: &mut Args,
        defs: &mut Defs,
        keys: &[(&'static str, Option<Enum>)],
    ) {
        for &(key, e) in keys {
            let how = match e {
                Some(e) => crate::cpu::How::Enum(e),
                None => crate::cpu::How::Raw,
            };
            if let Some(v) = self.arg_value(c, how, defs) {
                self.arg(defs, args, key, v);
            }
        }
    }

    fn kernel_args(
        &mut self,
        c: &mut Cols,
        args: &mut Args,
        defs: &mut Defs,
        at: &dyn Fn() -> Location,
    ) -> (StrId, StrId) {
        let short = c.raw();
        let demangled = c.raw();
        let mangled = c.raw();
        let name = match (&short, &demangled) {
            (Some(Value::Int(id)), _) | (None, Some(Value::Int(id))) => self.name(defs, *id, at),
            _ => defs.intern("kernel"),
        };
        if let (Some(Value::Int(d)), Some(Value::Int(s))) = (&demangled, &short) {
            if d != s {
                if let Some(text) = self.strings.get(*d) {
                    if text != defs.str(name) {
                        let v = Value::str(text);
                        self.arg(defs, args, "demangled_name", v);
                    }
                }
            }
        }
        if let Some(Value::Int(m)) = mangled {
            if let Some(text) = self.strings.get(m) {
                let v = Value::str(text);
                self.arg(defs, args, "mangled_name", v);
            }
        }
        for key in ["grid", "block", "cluster"] {
            if let Some(v) = dims(c) {
                if key != "cluster" || v != Value::Json("[0,0,0]".into()) {
                    self.arg(defs, args, key, v);
                }
            }
        }
        self.add_args(
            c,
            args,
            defs,
            &[
                ("registers_per_thread", None),
                ("static_shared_memory", None),
                ("dynamic_shared_memory", None),
                ("shared_memory_executed", None),
                ("local_memory_per_thread", None),
                ("local_memory_total", None),
                ("launch_type", Some(Enum::LaunchType)),
                ("cache_config", Some(Enum::CacheConfig)),
                ("grid_id", None),
                ("graph_node_id", None),
                ("graph_id", None),
            ],
        );
        (name, self.keys.cat_kernel)
    }

    fn memcpy_args(
        &mut self,
        c: &mut Cols,
        args: &mut Args,
        defs: &mut Defs,
        start: i64,
        end: Option<i64>,
    ) -> (StrId, StrId) {
        let bytes = c.raw();
        let kind = c.raw();
        let name = match &kind {
            Some(Value::Int(k)) => {
                let label = self.enums.label_or_number(Enum::MemcpyOper, *k);
                let v = Value::str(label.clone());
                self.arg(defs, args, "copy_kind", v);
                self.memcpy_name(defs, *k, &label)
            }
            _ => defs.intern("Memcpy"),
        };
        if let Some(b) = bytes {
            if let (Value::Int(n), Some(e)) = (&b, end) {
                if e > start {
                    let gbps = *n as f64 / (e - start) as f64;
                    self.arg(defs, args, "bandwidth_gb_per_s", Value::Float(gbps));
                }
            }
            self.arg(defs, args, "bytes", b);
        }
        self.add_args(
            c,
            args,
            defs,
            &[
                ("src_kind", Some(Enum::MemKind)),
                ("dst_kind", Some(Enum::MemKind)),
                ("src_device", None),
                ("src_context", None),
                ("dst_device", None),
                ("dst_context", None),
                ("migration_cause", Some(Enum::UnifMemMigration)),
                ("graph_node_id", None),
                ("virtual_address", None),
                ("copy_count", None),
            ],
        );
        (name, self.keys.cat_memcpy)
    }

    /// "Memcpy HtoD" style names, cached per copy kind.
    fn memcpy_name(&mut self, defs: &mut Defs, kind: i64, label: &str) -> StrId {
        if let Some(&n) = self.memcpy_names.get(&kind) {
            return n;
        }
        let short = match kind {
            1 => "HtoD",
            2 => "DtoH",
            3 => "HtoA",
            4 => "AtoH",
            5 => "AtoA",
            6 => "AtoD",
            7 => "DtoA",
            8 => "DtoD",
            9 => "HtoH",
            10 => "PtoP",
            _ => label,
        };
        let n = defs.intern(&format!("Memcpy {short}"));
        self.memcpy_names.insert(kind, n);
        n
    }

    pub fn decode_cuda_event(&mut self, table: &str, row: &Row, defs: &mut Defs) -> Decoded {
        let _ = table;
        let mut c = Cols::new(row);
        let ts = c.int("timestamp")?;
        let device = c.int("deviceId")?;
        let context = c.opt_int("contextId")?;
        let stream = c.int("streamId")?;
        let Some(gpid) = c.opt_int("globalPid")? else {
            return Err(Skip::NoId("globalPid"));
        };
        let mut args = Args::new();
        if let Some(corr) = c.raw() {
            args.push(Arg {
                key: self.keys.correlation_id,
                value: corr,
            });
        }
        self.add_args(
            &mut c,
            &mut args,
            defs,
            &[("event_id", None), ("event_sync_id", None)],
        );
        let track = self
            .ids
            .stream(defs, GlobalId(gpid), device, context.unwrap_or(0), stream);
        let name = defs.intern("CUDA event completed");
        Parts::plain_instant(track, ts, name, self.keys.cat_cuda_event, args)
    }
}
