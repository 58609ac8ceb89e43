//! `nvtx-kernel`: each NVTX push/pop range projected onto the GPU time of the kernels launched
//! inside it (from the first kernel's start to the last kernel's end), one slice per range and
//! GPU, on an async track of that GPU.
//!
//! A projected slice starts at its first kernel, which the main pass may reach before the
//! range's last launch, so projections are computed first ([`Pass`]): one sweep over the ranges
//! and the kernel launches, both in time order, with a stack of open ranges per thread
//! (memory: nesting depth). Finished projections go to a temporary SQLite table (in the system
//! temp directory, never beside the input), which the stream then reads in time order.

use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use rustc_hash::FxHashMap;
use tracex_ir::{Defs, Event, Location, Result, Slice, Value};

use crate::db::{sqlite_error, Cols, Row, Schema};
use crate::identity::GlobalId;
use crate::importer::{Decoded, Hook, Importer};
use crate::nvtx::{name_sql, prefix_filter, PUSH_POP};
use crate::options::Activity;
use crate::plan::{order_by, Kind, Query, StreamDef};

const TABLE: &str = "temp.tracex_nvtx_projection";

/// What the kernels of one range covered on one GPU so far.
struct Coverage {
    /// (machine, device)
    gpu: (i64, i64),
    first: i64,
    last: i64,
    kernels: i64,
}

/// A range still open on its thread.
struct Open {
    end: i64,
    rowid: i64,
    gtid: i64,
    name: String,
    gpus: Vec<Coverage>,
}

/// The projection pass: push/pop ranges and kernel launches, each in time order.
#[derive(Debug)]
pub struct Pass {
    ranges: Query,
    launches: Query,
    table: String,
}

/// The stream of projected slices (its reader runs the [`Pass`] first), when `nvtx-kernel` is
/// wanted and the file has NVTX ranges, API calls and kernels.
pub fn plan(schema: &Schema, imp: &Importer) -> Option<StreamDef> {
    if !imp.opts.activities.contains(Activity::NvtxKernel) {
        return None;
    }
    let n = schema.table("NVTX_EVENTS")?;
    let r = schema.table("CUPTI_ACTIVITY_KIND_RUNTIME")?;
    let k = schema.table("CUPTI_ACTIVITY_KIND_KERNEL")?;
    let needed = [
        n.has("eventType"),
        n.has("start"),
        n.has("globalTid"),
        r.has("correlationId"),
        k.has("correlationId"),
        k.has("globalPid"),
    ];
    if needed.contains(&false) {
        return None;
    }
    let mut params = Vec::new();
    let filter = prefix_filter(&n, "n.", &imp.opts.nvtx_prefixes, &mut params);
    let nc = |c: &str| format!("n.{}", n.col(c));
    let select = format!(
        "SELECT n.rowid, {}, {}, {}, {} FROM {} n WHERE {} IN ({PUSH_POP}){filter}",
        nc("start"),
        nc("end"),
        nc("globalTid"),
        name_sql(&n, "n."),
        n.sql_name(),
        nc("eventType"),
    );
    let keys = format!("{}, n.rowid", nc("start"));
    let mut ranges = Query::ordered(&n, "start", Some("end"), |sorted| {
        format!("{select}{}", order_by(sorted, &keys))
    });
    ranges.params = params;
    let rc = |c: &str| format!("r.{}", r.col(c));
    let kc = |c: &str| format!("k.{}", k.col(c));
    let class = if r.has("eventClass") {
        format!(" AND {} IN (0, 1)", rc("eventClass"))
    } else {
        String::new()
    };
    let select = format!(
        "SELECT r.rowid, {}, {}, {}, {}, {}, {} FROM {} r CROSS JOIN {} k \
         ON {} = {} AND ({} >> 24) = ({} >> 24) WHERE 1{class}",
        rc("start"),
        rc("globalTid"),
        kc("start"),
        kc("end"),
        kc("deviceId"),
        kc("globalPid"),
        r.sql_name(),
        k.sql_name(),
        kc("correlationId"),
        rc("correlationId"),
        kc("globalPid"),
        rc("globalTid"),
    );
    let keys = format!("{}, r.rowid, k.rowid", rc("start"));
    let launches = Query::ordered(&r, "start", Some("end"), |sorted| {
        format!("{select}{}", order_by(sorted, &keys))
    });
    Some(StreamDef {
        table: "tracex_nvtx_projection".into(),
        query: Query::sorted(format!(
            "SELECT rowid, start, end, machine, device, name, gtid, nvtx_rowid, kernels \
             FROM {TABLE} ORDER BY start, end DESC, rowid"
        )),
        kind: Kind::Projection,
        unique_rowid: false,
        prepare: Some(Box::new(Pass {
            ranges,
            launches,
            table: n.name.clone(),
        })),
    })
}

/// An integer column of an owned row.
fn int(row: &Row, i: usize) -> Option<i64> {
    match row.get(i) {
        Some(SqlValue::Integer(v)) => Some(*v),
        _ => None,
    }
}

/// Reads one row of `rows` into an owned row.
fn next_row(rows: &mut rusqlite::Rows) -> rusqlite::Result<Option<Vec<SqlValue>>> {
    let Some(r) = rows.next()? else {
        return Ok(None);
    };
    let n = r.as_ref().column_count();
    (0..n)
        .map(|i| r.get::<_, SqlValue>(i))
        .collect::<rusqlite::Result<_>>()
        .map(Some)
}

/// Pops the ranges of `gtid` that ended at or before `ts`.
fn close(open: &mut FxHashMap<i64, Vec<Open>>, gtid: i64, ts: i64, done: &mut Vec<Open>) {
    if let Some(stack) = open.get_mut(&gtid) {
        let mut i = 0;
        while i < stack.len() {
            if stack[i].end <= ts {
                done.push(stack.remove(i));
            } else {
                i += 1;
            }
        }
    }
}

/// Adds a kernel (start `ks`, end `ke`, on `gpu`) to every range open on its thread.
fn cover(stack: &mut [Open], gpu: (i64, i64), ks: i64, ke: i64) {
    for o in stack {
        match o.gpus.iter_mut().find(|c| c.gpu == gpu) {
            Some(c) => {
                c.first = c.first.min(ks);
                c.last = c.last.max(ke);
                c.kernels += 1;
            }
            None => o.gpus.push(Coverage {
                gpu,
                first: ks,
                last: ke,
                kernels: 1,
            }),
        }
    }
}

impl Pass {
    /// Computes the projections into the temporary table of `conn`.
    pub fn run(&self, conn: &Connection) -> Result<()> {
        let at = Location::Row {
            table: self.table.clone(),
            rowid: 0,
        };
        let err = |e| sqlite_error(at.clone(), "cannot project NVTX ranges onto kernels", e);
        conn.execute_batch(&format!(
            "DROP TABLE IF EXISTS {TABLE}; CREATE TABLE {TABLE} (start INTEGER, end INTEGER, \
             machine INTEGER, device INTEGER, name TEXT, gtid INTEGER, nvtx_rowid INTEGER, \
             kernels INTEGER)"
        ))
        .map_err(err)?;
        let mut ranges_stmt = conn.prepare(self.ranges.sql(conn)?).map_err(err)?;
        let mut launch_stmt = conn.prepare(self.launches.sql(conn)?).map_err(err)?;
        let mut insert = conn
            .prepare(&format!(
                "INSERT INTO {TABLE} VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
            ))
            .map_err(err)?;
        let mut ranges = ranges_stmt
            .query(rusqlite::params_from_iter(self.ranges.params.iter()))
            .map_err(err)?;
        let mut launches = launch_stmt.query([]).map_err(err)?;
        let mut finish = |o: Open| -> rusqlite::Result<()> {
            for c in o.gpus {
                insert.execute(rusqlite::params![
                    c.first, c.last, c.gpu.0, c.gpu.1, o.name, o.gtid, o.rowid, c.kernels
                ])?;
            }
            Ok(())
        };
        let mut open: FxHashMap<i64, Vec<Open>> = FxHashMap::default();
        let mut done = Vec::new();
        // rows: ranges (rowid, start, end, gtid, name); launches (rowid, start, gtid, k.start,
        // k.end, k.device, k.globalPid)
        let mut range = next_row(&mut ranges).map_err(err)?;
        let mut launch = next_row(&mut launches).map_err(err)?;
        loop {
            let take_range = match (&range, &launch) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                // at equal times the range comes first: a launch at its start is inside it
                (Some(n), Some(l)) => {
                    int(n, 1).unwrap_or(i64::MIN) <= int(l, 1).unwrap_or(i64::MIN)
                }
            };
            if take_range {
                let n = range.take().expect("a range");
                if let (Some(rowid), Some(start), Some(gtid)) = (int(&n, 0), int(&n, 1), int(&n, 3))
                {
                    close(&mut open, gtid, start, &mut done);
                    let name = match n.get(4) {
                        Some(SqlValue::Text(t)) => t.clone(),
                        _ => "[unnamed NVTX range]".into(),
                    };
                    open.entry(gtid).or_default().push(Open {
                        end: int(&n, 2).unwrap_or(i64::MAX),
                        rowid,
                        gtid,
                        name,
                        gpus: Vec::new(),
                    });
                }
                range = next_row(&mut ranges).map_err(err)?;
            } else {
                let l = launch.take().expect("a launch");
                if let (Some(ts), Some(gtid), Some(ks), Some(dev), Some(gpid)) =
                    (int(&l, 1), int(&l, 2), int(&l, 3), int(&l, 5), int(&l, 6))
                {
                    close(&mut open, gtid, ts, &mut done);
                    if let Some(stack) = open.get_mut(&gtid) {
                        let ke = int(&l, 4).unwrap_or(ks).max(ks);
                        cover(stack, (GlobalId(gpid).machine(), dev), ks, ke);
                    }
                }
                launch = next_row(&mut launches).map_err(err)?;
            }
            for o in done.drain(..) {
                finish(o).map_err(err)?;
            }
        }
        let mut rest: Vec<Open> = open.into_values().flatten().collect();
        rest.sort_by_key(|o| o.rowid);
        for o in rest {
            finish(o).map_err(err)?;
        }
        Ok(())
    }
}

impl Importer<'_> {
    pub fn decode_projection(&mut self, row: &Row, defs: &mut Defs) -> Decoded {
        let mut c = Cols::new(row);
        let start = c.int("start")?;
        let end = c.int("end")?;
        let machine = c.int("machine")?;
        let device = c.int("device")?;
        let name = c.opt_text().unwrap_or_default();
        let gtid = c.int("gtid")?;
        let nvtx_rowid = c.int("nvtx_rowid")?;
        let kernels = c.int("kernels")?;
        let dev = self.ids.device(defs, machine, device);
        let track_name = defs.intern("NVTX ranges (GPU time)");
        let track = self.ids.async_track(defs, dev, track_name);
        let name = defs.intern(&name);
        let mut args = Vec::with_capacity(4);
        self.arg(defs, &mut args, "pid", Value::Int(GlobalId(gtid).pid()));
        self.arg(defs, &mut args, "tid", Value::Int(GlobalId(gtid).tid()));
        self.arg(defs, &mut args, "kernels", Value::Int(kernels));
        self.arg(defs, &mut args, "nvtx_rowid", Value::Int(nvtx_rowid));
        let mut s = Slice::new(track, start, (end - start).max(0), name);
        s.cat = Some(self.keys.cat_nvtx_kernel);
        s.color = self.color_of(defs, name);
        s.args = args;
        Ok(Some((Event::Slice(s), Hook::None)))
    }
}
