//! Flows from CUDA API calls to the GPU work they launched, joined on (process,
//! correlationId): correlation ids are per-process counters, so the id alone would pair calls of
//! one process with work of another.
//!
//! For each GPU table, a join of the API calls with that table in API-call order gives the flow
//! starts; each start is emitted at its call and remembered until the GPU row is emitted, which
//! then gets the flow's end. Memory holds only launches whose work has not started yet.

use rusqlite::Row;
use tracex_ir::{Defs, Event, FlowBind, FlowId, FlowPoint, FlowRole, Result};

use crate::db::{Cols, Schema};
use crate::gpu::{valid_sql, GPU_TABLES};
use crate::importer::{Decoded, Hook, Importer, Skip};
use crate::plan::{order_by, Kind, StreamDef};

/// One launch stream per GPU table that has correlation ids. `api_sorted` tells whether the
/// API table is stored in time order (then the join, driven by it, is too).
pub fn plans(
    schema: &Schema,
    imp: &mut Importer,
    api_sorted: Option<bool>,
    out: &mut Vec<StreamDef>,
) -> Result<()> {
    let Some(api_sorted) = api_sorted else {
        return Ok(());
    };
    let Some(r) = schema.table("CUPTI_ACTIVITY_KIND_RUNTIME") else {
        return Ok(());
    };
    if !r.has("correlationId") {
        return Ok(());
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
        let sql = format!(
            "SELECT r.rowid, {rs}, {rt}, g.rowid, {gs} FROM {rn} r CROSS JOIN {gn} g \
             ON {gk} = {rk} AND ({gp} >> 24) = ({rt} >> 24) \
             WHERE typeof({rs}) = 'integer' AND typeof({rt}) = 'integer' \
             AND typeof({re}) IN ('integer', 'null'){class_filter} AND {valid}{order}",
            rs = rc("start"),
            rt = rc("globalTid"),
            re = rc("end"),
            rk = rc("correlationId"),
            gs = gc("start"),
            gk = gc("correlationId"),
            gp = gc("globalPid"),
            rn = r.sql_name(),
            gn = g.sql_name(),
            valid = valid_sql("g", &g),
            order = order_by(api_sorted, &format!("{}, r.rowid, g.rowid", rc("start"))),
        );
        let src = spec.src as usize;
        if imp.flow_sources.len() <= src {
            imp.flow_sources.resize(src + 1, false);
        }
        imp.flow_sources[src] = true;
        out.push(StreamDef::new(&r, sql, Kind::Launch { src: spec.src }));
    }
    Ok(())
}

impl Importer<'_> {
    pub fn decode_launch(&mut self, src: u8, row: &Row, defs: &mut Defs) -> Decoded {
        let mut c = Cols::new(row);
        let ts = c.int("start")?;
        let Some(gtid) = c.opt_int("globalTid")? else {
            return Err(Skip::NoId("globalTid"));
        };
        let grow = c.int("rowid")?;
        let gpu_start = c.int("start")?;
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
