//! Flows from CUDA API calls to the GPU work they launched, joined on (process,
//! correlationId): correlation ids are per-process counters, so the id alone would pair calls of
//! one process with work of another.
//!
//! For each GPU table, a join of the API calls with that table in API-call order gives the flow
//! starts; each start is emitted at its call and remembered until the GPU row is emitted, which
//! then gets the flow's end. Memory holds only launches whose work has not started yet.

use std::sync::Arc;

use tracex_ir::{Defs, Event, FlowBind, FlowId, FlowPoint, FlowRole};

use crate::catalogue::{COMMON, GPU_TABLES, SRC_KERNEL};
use crate::db::{Cols, Row, Schema, Table};
use crate::decoded::{Decoded, Hook, Skip};
use crate::importer::Importer;
use crate::plan::{order_by, Kind, Query, StreamDef};
use crate::spool::Spool;

/// The GPU columns a launch reads to know that its GPU row will be emitted (the ones
/// [`crate::gpu::decode_gpu`] rejects a row for), then the process (for the nvtx-kernel pass):
/// `start` … `globalPid`, the head of [`COMMON`].
const GPU_COLUMNS: &[&str] = COMMON.split_at(6).0;

/// Columns of a launch row: r.rowid, r.start, r.globalTid, g.rowid, then [`GPU_COLUMNS`].
pub const LAUNCH_COLUMNS: usize = 4 + GPU_COLUMNS.len();

/// The API and GPU tables of launches of `gpu`, when both have what a join needs.
pub fn tables(schema: &Schema, gpu: &str) -> Option<(Table, Table)> {
    let r = schema.table("CUPTI_ACTIVITY_KIND_RUNTIME")?;
    let g = schema.table(gpu)?;
    let ok = r.has("correlationId") && r.has("start") && r.has("globalTid");
    let ok = ok && g.has("correlationId") && g.has("globalPid") && g.has("start");
    ok.then_some((r, g))
}

/// The launches of GPU table `g` by API table `r`, joined on (process, correlationId), in
/// API-call order. CROSS JOIN keeps the API table as the outer loop, so the join is in time
/// order when that table is stored in time order.
pub fn launch_query(r: &Table, g: &Table) -> Query {
    let rc = |c: &str| format!("r.{}", r.col(c));
    let gc = |c: &str| format!("g.{}", g.col(c));
    let class = if r.has("eventClass") {
        format!(" AND {} IN (0, 1)", rc("eventClass"))
    } else {
        String::new()
    };
    let select = format!(
        "SELECT r.rowid, {rs}, {rt}, g.rowid, {gcols} FROM {rn} r CROSS JOIN {gn} g \
         ON {gk} = {rk} AND ({gp} >> 24) = ({rt} >> 24) WHERE 1{class}",
        rs = rc("start"),
        rt = rc("globalTid"),
        rk = rc("correlationId"),
        gcols = GPU_COLUMNS
            .iter()
            .map(|c| gc(c))
            .collect::<Vec<_>>()
            .join(", "),
        gk = gc("correlationId"),
        gp = gc("globalPid"),
        rn = r.sql_name(),
        gn = g.sql_name(),
    );
    let keys = format!("{}, r.rowid, g.rowid", rc("start"));
    Query::ordered(r, "start", Some("end"), |sorted| {
        format!("{select}{}", order_by(sorted, &keys))
    })
}

/// Whether the kernel launches are read for flows (the nvtx-kernel pass then shares them).
pub fn kernel_launches_wanted(schema: &Schema, imp: &Importer, api: bool) -> bool {
    api && imp.wants(crate::options::Activity::Kernel)
        && tables(schema, "CUPTI_ACTIVITY_KIND_KERNEL").is_some()
}

/// One launch stream per GPU table that has correlation ids, when the API calls are read
/// (`api`). The kernel launches come from `kernel_spool` when the nvtx-kernel pass reads them.
/// Returns the flow sources whose launches are read.
pub fn plans(
    schema: &Schema,
    imp: &Importer,
    api: bool,
    kernel_spool: Option<Arc<Spool>>,
    out: &mut Vec<StreamDef>,
) -> Vec<u8> {
    let mut sources = Vec::new();
    if !api {
        return sources;
    }
    for spec in GPU_TABLES {
        if !imp.wants(spec.activity) {
            continue;
        }
        let Some((r, g)) = tables(schema, spec.table) else {
            continue;
        };
        sources.push(spec.src);
        let kind = Kind::Launch { src: spec.src };
        match (&kernel_spool, spec.src == SRC_KERNEL) {
            (Some(spool), true) => out.push(StreamDef::spooled(&r.name, spool.clone(), kind)),
            _ => out.push(StreamDef::new(&r, launch_query(&r, &g), kind)),
        }
    }
    sources
}

/// A launch of GPU work of flow source `src`: a flow start on the launching thread.
pub fn decode_launch(imp: &mut Importer, src: u8, row: &Row, defs: &mut Defs) -> Decoded {
    let mut c = Cols::new(row);
    let ts = c.int("start")?;
    let Some(gtid) = c.opt_int("globalTid")? else {
        return Err(Skip::NoId("globalTid"));
    };
    let grow = c.int("rowid")?;
    // GPU work that its own stream will skip as malformed gets no flow either.
    let (Ok(gpu_start), Ok(_), Ok(_), Ok(_), Ok(_)) = (
        c.int("start"),
        c.opt_int("end"),
        c.int("deviceId"),
        c.opt_int("contextId"),
        c.int("streamId"),
    ) else {
        return Ok(None);
    };
    let track = imp.thread(defs, gtid);
    Ok(Some((
        Event::Flow(FlowPoint {
            id: FlowId(0),
            role: FlowRole::Start,
            track,
            ts,
            bind: FlowBind::Enclosing,
            name: Some(imp.keys().launch),
            cat: Some(imp.keys().cat_launch),
        }),
        Hook::Launch {
            src,
            grow,
            gpu_start,
        },
    )))
}
