//! GPU work on per-device, per-stream tracks: kernels, memory copies and sets, synchronization,
//! CUDA graph launches (graph-mode tracing), and CUDA event completions.

use rustc_hash::FxHashMap;
use tracex_ir::{Args, Defs, Diagnostics, Location, Result, StrId, Value};

use crate::catalogue::{specific_columns, GpuKind, GpuTable, How, COMMON, GPU_TABLES};
use crate::db::rows_where;
use crate::db::{rowid, Cols, Row, Table};
use crate::decoded::{Decoded, Hook, Parts, Skip, Slot};
use crate::diag::{record_rows, row_at};
use crate::enums::Enum;
use crate::identity::GlobalId;
use crate::importer::Importer;
use crate::options::Activity;
use crate::plan::{order_by, range_order, usable};
use crate::plan::{Kind, Query, Setup, StreamDef};
use crate::scan::ScanSpec;
use crate::scan::{row_count, rows};

/// Streams of the GPU tables present.
pub fn plans(setup: &mut Setup, imp: &Importer) -> Result<()> {
    for spec in GPU_TABLES {
        let what = (spec.activity, spec.table);
        let needed = ["start", "deviceId", "streamId", "globalPid"];
        let Some(t) = setup.wanted(imp.activities(), what, &needed)? else {
            continue;
        };
        let mut cols: Vec<&str> = COMMON.to_vec();
        cols.extend_from_slice(specific_columns(spec.kind));
        let select = format!(
            "SELECT rowid, {} FROM {}",
            t.select_list(&cols),
            t.sql_name()
        );
        let query = Query::ordered(&t, "start", Some("end"), |sorted| {
            format!("{select}{}", order_by(sorted, &range_order(&t, "")))
        })
        .with_spec(ScanSpec::new(&t, &cols));
        setup
            .streams
            .push(StreamDef::new(&t, query, Kind::Gpu(spec)));
    }
    if imp.wants(Activity::CudaEvent) {
        if let Some(t) = setup.schema.table("CUPTI_ACTIVITY_KIND_CUDA_EVENT") {
            cuda_event_plan(setup, &t)?;
        }
    }
    Ok(())
}

/// CUDA event completions: instants where nsys collected a timestamp (2025.5+, non-zero).
fn cuda_event_plan(setup: &mut Setup, t: &Table) -> Result<()> {
    let (conn, diag) = (setup.conn, &mut *setup.diag);
    if !t.has("timestamp") {
        let all = rows(conn, t)?;
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
    let timed = row_count(conn, t)? - untimed.0;
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
fn dims(c: &mut Cols) -> Option<[i64; 3]> {
    match (c.raw(), c.raw(), c.raw()) {
        (Some(Value::Int(x)), Some(Value::Int(y)), Some(Value::Int(z))) => Some([x, y, z]),
        _ => None,
    }
}

/// A row of a GPU table.
pub fn decode_gpu(
    imp: &mut Importer,
    names: &mut MemcpyNames,
    (spec, table): (&GpuTable, &str),
    row: &Row,
    (defs, diag): (&mut Defs, &mut Diagnostics),
    slot: &mut Slot,
) -> Result<(), Skip> {
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
    c.push_raw(&mut args, || imp.keys().correlation_id);
    if let Some(ctxid) = context {
        imp.arg(defs, &mut args, "context", || Value::Int(ctxid));
    }
    c.push_raw(&mut args, || imp.key(defs, "green_context"));
    let track = imp.stream(defs, GlobalId(gpid), device, (context.unwrap_or(0), stream));
    let (name, cat) = match spec.kind {
        GpuKind::Kernel => kernel_args(imp, &mut c, &mut args, (defs, diag), &at),
        GpuKind::Memcpy => names.memcpy_args(imp, &mut c, &mut args, defs, (start, end)),
        GpuKind::Memset => {
            add_args(
                imp,
                &mut c,
                &mut args,
                defs,
                &[("bytes", None), ("value", None)],
            );
            add_args(
                imp,
                &mut c,
                &mut args,
                defs,
                &[("mem_kind", Some(Enum::MemKind))],
            );
            add_args(imp, &mut c, &mut args, defs, &[("graph_node_id", None)]);
            (defs.intern("Memset"), imp.keys().cat_memset)
        }
        GpuKind::Sync => {
            let ty = c.raw();
            let name = match &ty {
                Some(Value::Int(t)) => {
                    let label = imp.label(defs, Enum::SyncType, *t);
                    imp.arg(defs, &mut args, "sync_type", || Value::Sym(label));
                    label
                }
                _ => defs.intern("Synchronization"),
            };
            add_args(
                imp,
                &mut c,
                &mut args,
                defs,
                &[("event_id", None), ("event_sync_id", None)],
            );
            (name, imp.keys().cat_sync)
        }
        GpuKind::Graph => {
            let graph = c.raw();
            let name = match &graph {
                Some(Value::Int(g)) => defs.intern(&format!("CUDA graph {g}")),
                _ => defs.intern("CUDA graph"),
            };
            if let Some(g) = graph {
                imp.arg(defs, &mut args, "graph_id", || g);
            }
            add_args(imp, &mut c, &mut args, defs, &[("graph_exec_id", None)]);
            (name, imp.keys().cat_graph)
        }
    };
    let dur = imp.duration(defs, diag, (start, end), &mut args, at);
    let parts = Parts {
        track,
        ts: start,
        name,
        cat,
        args,
    };
    *slot = Some((
        parts.slice(dur, None, None),
        Hook::Gpu {
            src: spec.src,
            rowid: rid,
        },
    ));
    Ok(())
}

/// Reads the next columns as arguments `keys` (an enum label when given), skipping NULLs.
fn add_args(
    imp: &mut Importer,
    c: &mut Cols,
    args: &mut Args,
    defs: &mut Defs,
    keys: &'static [(&'static str, Option<Enum>)],
) {
    let table = imp.key_table(defs, keys);
    for (i, &(_, e)) in keys.iter().enumerate() {
        let how = match e {
            Some(e) => How::Enum(e),
            None => How::Raw,
        };
        imp.arg_column(defs, c, how, args, |imp, _| imp.key_in(table, i));
    }
}

fn kernel_args(
    imp: &mut Importer,
    c: &mut Cols,
    args: &mut Args,
    (defs, diag): (&mut Defs, &mut Diagnostics),
    at: &dyn Fn() -> Location,
) -> (StrId, StrId) {
    let short = c.raw();
    let demangled = c.raw();
    let mangled = c.raw();
    let name = match (&short, &demangled) {
        (Some(Value::Int(id)), _) | (None, Some(Value::Int(id))) => imp.name(defs, diag, *id, at),
        _ => defs.intern("kernel"),
    };
    if let (Some(Value::Int(d)), Some(Value::Int(s))) = (&demangled, &short) {
        if d != s {
            if let Some(text) = imp.text_sym(defs, *d) {
                if text != name {
                    imp.arg(defs, args, "demangled_name", || Value::Sym(text));
                }
            }
        }
    }
    if let Some(Value::Int(m)) = mangled {
        if let Some(text) = imp.text_sym(defs, m) {
            imp.arg(defs, args, "mangled_name", || Value::Sym(text));
        }
    }
    for (kind, key) in ["grid", "block", "cluster"].into_iter().enumerate() {
        if let Some(d) = dims(c) {
            if key != "cluster" || d != [0, 0, 0] {
                let shape = imp.shape(defs, kind, d);
                imp.arg(defs, args, key, || Value::JsonSym(shape));
            }
        }
    }
    add_args(
        imp,
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
    (name, imp.keys().cat_kernel)
}

/// Memcpy slice names by copy kind.
#[derive(Default)]
pub struct MemcpyNames(FxHashMap<i64, StrId>);

impl MemcpyNames {
    fn memcpy_args(
        &mut self,
        imp: &mut Importer,
        c: &mut Cols,
        args: &mut Args,
        defs: &mut Defs,
        (start, end): (i64, Option<i64>),
    ) -> (StrId, StrId) {
        let bytes = c.raw();
        let kind = c.raw();
        let name = match &kind {
            Some(Value::Int(k)) => {
                let label = imp.label(defs, Enum::MemcpyOper, *k);
                imp.arg(defs, args, "copy_kind", || Value::Sym(label));
                self.name(defs, *k, label)
            }
            _ => defs.intern("Memcpy"),
        };
        if let Some(b) = bytes {
            if let (Value::Int(n), Some(e)) = (&b, end) {
                if e > start {
                    let gbps = *n as f64 / (e - start) as f64;
                    imp.arg(defs, args, "bandwidth_gb_per_s", || Value::Float(gbps));
                }
            }
            imp.arg(defs, args, "bytes", || b);
        }
        add_args(
            imp,
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
        (name, imp.keys().cat_memcpy)
    }

    /// "Memcpy HtoD" style names, cached per copy kind.
    fn name(&mut self, defs: &mut Defs, kind: i64, label: StrId) -> StrId {
        if let Some(&n) = self.0.get(&kind) {
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
            _ => defs.str(label),
        };
        let n = defs.intern(&format!("Memcpy {short}"));
        self.0.insert(kind, n);
        n
    }
}

/// A CUDA event completion.
pub fn decode_cuda_event(imp: &mut Importer, row: &Row, defs: &mut Defs) -> Decoded {
    let mut c = Cols::new(row);
    let ts = c.int("timestamp")?;
    let device = c.int("deviceId")?;
    let context = c.opt_int("contextId")?;
    let stream = c.int("streamId")?;
    let Some(gpid) = c.opt_int("globalPid")? else {
        return Err(Skip::NoId("globalPid"));
    };
    let mut args = Args::new();
    c.push_raw(&mut args, || imp.keys().correlation_id);
    add_args(
        imp,
        &mut c,
        &mut args,
        defs,
        &[("event_id", None), ("event_sync_id", None)],
    );
    let track = imp.stream(defs, GlobalId(gpid), device, (context.unwrap_or(0), stream));
    let name = defs.intern("CUDA event completed");
    Parts::plain_instant(track, ts, name, imp.keys().cat_cuda_event, args)
}
