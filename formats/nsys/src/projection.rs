//! `nvtx-kernel`: each NVTX push/pop range projected onto the GPU time of the kernels launched
//! inside it (from the first kernel's start to the last kernel's end), one slice per range and
//! GPU, on an async track of that GPU.
//!
//! A projected slice starts at its first kernel, which the main pass may reach before the
//! range's last launch, so projections are computed first: one sweep over the ranges and the
//! kernel launches, both in time order, with a stack of open ranges per thread (memory: nesting
//! depth). Finished projections go to a temporary SQLite table (in the system temp directory,
//! never beside the input), which the main pass reads in time order like any other table.

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};
use rustc_hash::FxHashMap;
use tracex_ir::{Defs, Event, Location, Result, Slice, Value};

use crate::db::{sqlite_error, Cols, Schema};
use crate::gpu::valid_sql;
use crate::identity::GlobalId;
use crate::importer::{Decoded, Hook, Importer};
use crate::nvtx::{name_sql, prefix_filter, PUSH_POP};
use crate::options::Activity;
use crate::plan::{is_time_ordered, order_by, Kind, StreamDef};

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

/// Computes the projections into the temporary table; `false` when there is nothing to project.
pub fn prepare(conn: &Connection, schema: &Schema, imp: &Importer) -> Result<bool> {
    if !imp.opts.activities.contains(Activity::NvtxKernel) {
        return Ok(false);
    }
    let (Some(n), Some(r), Some(k)) = (
        schema.table("NVTX_EVENTS"),
        schema.table("CUPTI_ACTIVITY_KIND_RUNTIME"),
        schema.table("CUPTI_ACTIVITY_KIND_KERNEL"),
    ) else {
        return Ok(false);
    };
    let needed = [
        n.has("eventType"),
        n.has("start"),
        n.has("globalTid"),
        r.has("correlationId"),
        k.has("correlationId"),
        k.has("globalPid"),
    ];
    if needed.contains(&false) {
        return Ok(false);
    }
    let at = Location::Row {
        table: n.name.clone(),
        rowid: 0,
    };
    let err = |e| sqlite_error(at.clone(), "cannot project NVTX ranges onto kernels", e);
    conn.execute_batch(&format!(
        "DROP TABLE IF EXISTS {TABLE}; CREATE TABLE {TABLE} (start INTEGER, end INTEGER, \
         machine INTEGER, device INTEGER, name TEXT, gtid INTEGER, nvtx_rowid INTEGER, kernels INTEGER)"
    ))
    .map_err(err)?;

    let mut params = Vec::new();
    let filter = prefix_filter(&n, "n.", &imp.opts.nvtx_prefixes, &mut params);
    let nvtx_sorted = is_time_ordered(conn, &n, "start", Some("end"))?;
    let nc = |c: &str| format!("n.{}", n.col(c));
    let nvtx_sql = format!(
        "SELECT n.rowid, {}, {}, {}, {} FROM {} n WHERE {} IN ({PUSH_POP}) \
         AND typeof({s}) = 'integer' AND typeof({g}) = 'integer'{filter}{}",
        nc("start"),
        nc("end"),
        nc("globalTid"),
        name_sql(&n, "n."),
        n.sql_name(),
        nc("eventType"),
        order_by(nvtx_sorted, &format!("{}, n.rowid", nc("start"))),
        s = nc("start"),
        g = nc("globalTid"),
    );
    let rc = |c: &str| format!("r.{}", r.col(c));
    let kc = |c: &str| format!("k.{}", k.col(c));
    let class = if r.has("eventClass") {
        format!(" AND {} IN (0, 1)", rc("eventClass"))
    } else {
        String::new()
    };
    let api_sorted = is_time_ordered(conn, &r, "start", Some("end"))?;
    let launch_sql = format!(
        "SELECT {}, {}, {}, {}, {}, {} FROM {} r CROSS JOIN {} k ON {} = {} AND ({} >> 24) = ({} >> 24) \
         WHERE typeof({}) = 'integer' AND typeof({}) = 'integer'{class} AND {}{}",
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
        rc("start"),
        rc("globalTid"),
        valid_sql("k", &k),
        order_by(api_sorted, &format!("{}, r.rowid, k.rowid", rc("start"))),
    );
    let mut nvtx_stmt = conn.prepare(&nvtx_sql).map_err(err)?;
    let mut launch_stmt = conn.prepare(&launch_sql).map_err(err)?;
    let mut insert = conn
        .prepare(&format!(
            "INSERT INTO {TABLE} VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        ))
        .map_err(err)?;
    let mut nvtx_rows = nvtx_stmt
        .query(rusqlite::params_from_iter(params.iter()))
        .map_err(err)?;
    let mut launches = launch_stmt.query([]).map_err(err)?;
    let int = |r: &Row, i: usize| match r.get_ref(i) {
        Ok(ValueRef::Integer(v)) => Some(v),
        _ => None,
    };

    let mut open: FxHashMap<i64, Vec<Open>> = FxHashMap::default();
    let mut finish = |o: Open| -> rusqlite::Result<()> {
        for c in o.gpus {
            insert.execute(rusqlite::params![
                c.first, c.last, c.gpu.0, c.gpu.1, o.name, o.gtid, o.rowid, c.kernels
            ])?;
        }
        Ok(())
    };
    // Pops the ranges of `gtid` that ended at or before `ts`.
    let close = |open: &mut FxHashMap<i64, Vec<Open>>, gtid: i64, ts: i64, done: &mut Vec<Open>| {
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
    };
    let mut next_nvtx = nvtx_rows.next().map_err(err)?.map(|r| {
        (
            int(r, 1),
            int(r, 2),
            int(r, 3),
            int(r, 0),
            r.get::<_, Option<String>>(4).ok().flatten(),
        )
    });
    let mut next_launch = launches.next().map_err(err)?.map(|r| {
        (
            int(r, 0),
            int(r, 1),
            int(r, 2),
            int(r, 3),
            int(r, 4),
            int(r, 5),
        )
    });
    let mut done = Vec::new();
    loop {
        let take_nvtx = match (&next_nvtx, &next_launch) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            // at equal times the range comes first: a launch at its start is inside it
            (Some(n), Some(l)) => n.0.unwrap_or(i64::MIN) <= l.0.unwrap_or(i64::MIN),
        };
        if take_nvtx {
            if let Some((Some(start), end, Some(gtid), Some(rowid), name)) = next_nvtx.take() {
                close(&mut open, gtid, start, &mut done);
                open.entry(gtid).or_default().push(Open {
                    end: end.unwrap_or(i64::MAX),
                    rowid,
                    gtid,
                    name: name.unwrap_or_else(|| "[unnamed NVTX range]".into()),
                    gpus: Vec::new(),
                });
            }
            next_nvtx = nvtx_rows.next().map_err(err)?.map(|r| {
                (
                    int(r, 1),
                    int(r, 2),
                    int(r, 3),
                    int(r, 0),
                    r.get::<_, Option<String>>(4).ok().flatten(),
                )
            });
        } else {
            if let Some((Some(ts), Some(gtid), Some(ks), ke, Some(dev), Some(gpid))) =
                next_launch.take()
            {
                close(&mut open, gtid, ts, &mut done);
                if let Some(stack) = open.get_mut(&gtid) {
                    let ke = ke.unwrap_or(ks).max(ks);
                    let key = (GlobalId(gpid).machine(), dev);
                    for o in stack.iter_mut() {
                        match o.gpus.iter_mut().find(|c| c.gpu == key) {
                            Some(c) => {
                                c.first = c.first.min(ks);
                                c.last = c.last.max(ke);
                                c.kernels += 1;
                            }
                            None => o.gpus.push(Coverage {
                                gpu: key,
                                first: ks,
                                last: ke,
                                kernels: 1,
                            }),
                        }
                    }
                }
            }
            next_launch = launches.next().map_err(err)?.map(|r| {
                (
                    int(r, 0),
                    int(r, 1),
                    int(r, 2),
                    int(r, 3),
                    int(r, 4),
                    int(r, 5),
                )
            });
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
    Ok(true)
}

/// The stream of projected slices.
pub fn plan(out: &mut Vec<StreamDef>) {
    out.push(StreamDef {
        table: "tracex_nvtx_projection".into(),
        sql: format!(
            "SELECT rowid, start, end, machine, device, name, gtid, nvtx_rowid, kernels FROM {TABLE} \
             ORDER BY start, end DESC, rowid"
        ),
        params: Vec::new(),
        kind: Kind::Projection,
        unique_rowid: false,
    });
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
        let mut args = Vec::with_capacity(3);
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
