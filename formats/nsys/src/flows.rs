//! Flows from CUDA API calls to the GPU work they launched, joined on (process,
//! correlationId): correlation ids are per-process counters, so the id alone would pair calls of
//! one process with work of another.
//!
//! For each GPU table, a join of the API calls with that table in API-call order
//! ([`crate::join`]) gives the flow starts; each start is emitted at its call and remembered until the GPU row is emitted, which
//! then gets the flow's end. Memory holds only launches whose work has not started yet.

use std::sync::Arc;

use tracex_ir::{Defs, Event, FlowBind, FlowId, FlowPoint, FlowRole};

use crate::catalogue::{GPU_TABLES, SRC_KERNEL};
use crate::db::{Cols, Row, Schema, Table};
use crate::decoded::{Hook, Skip, Slot};
use crate::importer::Importer;
use crate::join::LaunchJoin;
use crate::plan::{Kind, StreamDef};
use crate::spool::Spool;

/// The API and GPU tables of launches of `gpu`, when both have what a join needs.
pub fn tables(schema: &Schema, gpu: &str) -> Option<(Table, Table)> {
    let r = schema.table("CUPTI_ACTIVITY_KIND_RUNTIME")?;
    let g = schema.table(gpu)?;
    let ok = r.has("correlationId") && r.has("start") && r.has("globalTid");
    let ok = ok && g.has("correlationId") && g.has("globalPid") && g.has("start");
    ok.then_some((r, g))
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
            _ => out.push(StreamDef::joined(LaunchJoin::new(&r, &g), kind)),
        }
    }
    sources
}

/// A launch of GPU work of flow source `src`: a flow start on the launching thread.
pub fn decode_launch(
    imp: &mut Importer,
    src: u8,
    row: &Row,
    defs: &mut Defs,
    slot: &mut Slot,
) -> Result<(), Skip> {
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
        return Ok(());
    };
    let _ = c.opt_int("globalPid");
    let correlation = c
        .opt_int("correlationId")
        .ok()
        .flatten()
        .and_then(|v| u64::try_from(v).ok());
    let track = imp.thread(defs, gtid);
    *slot = Some((
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
            correlation,
        },
    ));
    Ok(())
}
