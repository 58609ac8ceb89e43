//! Flows from CUDA API calls to the GPU work they launched, joined on (process,
//! correlationId): correlation ids are per-process counters, so the id alone would pair calls of
//! one process with work of another.
//!
//! For each GPU table, a join of the API calls with that table in API-call order gives the flow
//! starts; each start is emitted at its call and remembered until the GPU row is emitted, which
//! then gets the flow's end. Memory holds only launches whose work has not started yet.

use crate::db::Row;
use tracex_ir::{Defs, Event, FlowBind, FlowId, FlowPoint, FlowRole};

use crate::db::{Cols, Schema};
use crate::gpu::GPU_TABLES;
use crate::importer::{Decoded, Hook, Importer, Skip};
use crate::plan::{order_by, Kind, Query, StreamDef};

/// The GPU columns a launch reads to know that its GPU row will be emitted: the ones
/// [`Importer::decode_gpu`] rejects a row for.
const GPU_CHECKED: &[&str] = &["start", "end", "deviceId", "contextId", "streamId"];

/// One launch stream per GPU table that has correlation ids, when the API calls are read
/// (`api`). The join is driven by the API table, so it is in time order when that table is.
pub fn plans(schema: &Schema, imp: &mut Importer, api: bool, out: &mut Vec<StreamDef>) {
    if !api {
        return;
    }
    let Some(r) = schema.table("CUPTI_ACTIVITY_KIND_RUNTIME") else {
        return;
    };
    if !r.has("correlationId") {
        return;
    }
    let rc = |c: &str| format!("r.{}", r.col(c));
    let class_filter = if r.has("eventClass") {
        format!(" AND {} IN (0, 1)", rc("eventClass"))
    } else {
        String::new()
    };
    for spec in GPU_TABLES {
        if !imp.opts.activities.contains(spec.activity) {
            continue;
        }
        let Some(g) = schema.table(spec.table) else {
            continue;
        };
        if !g.has("correlationId") || !g.has("globalPid") || !g.has("start") {
            continue;
        }
        let gc = |c: &str| format!("g.{}", g.col(c));
        // CROSS JOIN keeps the API table as the outer loop: its order is the stream's order.
        let select = format!(
            "SELECT r.rowid, {rs}, {rt}, g.rowid, {gcols} FROM {rn} r CROSS JOIN {gn} g \
             ON {gk} = {rk} AND ({gp} >> 24) = ({rt} >> 24) WHERE 1{class_filter}",
            rs = rc("start"),
            rt = rc("globalTid"),
            rk = rc("correlationId"),
            gcols = GPU_CHECKED
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
        let query = Query::ordered(&r, "start", Some("end"), |sorted| {
            format!("{select}{}", order_by(sorted, &keys))
        });
        let src = spec.src as usize;
        if imp.flow_sources.len() <= src {
            imp.flow_sources.resize(src + 1, false);
        }
        imp.flow_sources[src] = true;
        out.push(StreamDef::new(&r, query, Kind::Launch { src: spec.src }));
    }
}

impl Importer<'_> {
    pub fn decode_launch(&mut self, src: u8, row: &Row, defs: &mut Defs) -> Decoded {
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
        let track = self.ids.thread(defs, &self.strings, gtid);
        Ok(Some((
            Event::Flow(FlowPoint {
                id: FlowId(0),
                role: FlowRole::Start,
                track,
                ts,
                bind: FlowBind::Enclosing,
                name: Some(self.keys.launch),
                cat: Some(self.keys.cat_launch),
            }),
            Hook::Launch {
                src,
                grow,
                gpu_start,
            },
        )))
    }
}
