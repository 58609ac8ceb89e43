//! `nvtx-kernel`: each NVTX push/pop range projected onto the GPU time of the kernels launched
//! inside it (from the first kernel's start to the last kernel's end), one slice per range and
//! GPU, on an async track of that GPU.
//!
//! A projected slice starts at its first kernel, which the main pass may reach before the
//! range's last launch, so projections are computed first ([`Pass`]): one sweep over the ranges
//! and the kernel launches, both in time order, with a stack of open ranges per thread
//! (memory: nesting depth). Finished projections wait in a temporary SQLite table (in the system
//! temp directory, never beside the input) until no earlier one can come, and go to the merge
//! in time order while the other streams run.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::Connection;
use rustc_hash::FxHashMap;
use tracex_ir::{Defs, Location, Result, Value};

use crate::db::{sqlite_error, Cols, Row, Schema, Table};
use crate::decoded::{Decoded, Hook, Parts};
use crate::flows;
use crate::identity::GlobalId;
use crate::importer::Importer;
use crate::join::{GpuIndex, LaunchJoin, LAUNCH_COLUMNS};
use crate::nvtx::{name_sql, prefix_filter, PUSH_POP};
use crate::options::{Activity, ImportOptions};
use crate::order::Orders;
use crate::plan::{order_by, Kind, Query, StreamDef};
use crate::spool::{Failure, Spool, SpoolWriter};

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

/// The projection pass: push/pop ranges and kernel launches, each in time order; it writes the
/// projections, and the launches too when the flows read them (one join for both).
pub struct Pass {
    ranges: Query,
    launches: LaunchJoin,
    table: String,
    projections: Arc<Spool>,
    /// Where the kernel launches go for the flows, when they are read.
    pub launch_spool: Option<Arc<Spool>>,
    /// The GPU side of the launch join, when a thread started reading it early ([`early`]).
    early: Mutex<Option<Receiver<Result<GpuIndex>>>>,
}

/// The NVTX, API and kernel tables of the pass, when `opts` want it and the file has them.
fn tables(schema: &Schema, opts: &ImportOptions) -> Option<(Table, Table, Table)> {
    if !opts.activities.contains(Activity::NvtxKernel) {
        return None;
    }
    let n = schema.table("NVTX_EVENTS")?;
    let (r, k) = flows::tables(schema, "CUPTI_ACTIVITY_KIND_KERNEL")?;
    (n.has("eventType") && n.has("start") && n.has("globalTid")).then_some((n, r, k))
}

/// The launch join's GPU side, read on a thread of `scope` while the importer reads its
/// definitions, when the pass will run: on the 1M-kernel benchmark its first row waited
/// half a second for this read, and so did the merge.
pub fn early<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    path: &'scope std::path::Path,
    schema: &Schema,
    opts: &ImportOptions,
) -> Option<Receiver<Result<GpuIndex>>> {
    let (_, r, k) = tables(schema, opts)?;
    let (tx, rx) = std::sync::mpsc::channel();
    let read = move || {
        let index = crate::db::open(path).and_then(|c| LaunchJoin::new(&r, &k).index(&c));
        // the pass may be gone (the import failed): nothing waits for the index then
        let _ = tx.send(index);
    };
    std::thread::Builder::new()
        .name("nsys gpu index".into())
        .spawn_scoped(scope, read)
        .ok()?;
    Some(rx)
}

/// The stream of projected slices and the pass that makes them, when `nvtx-kernel` is wanted
/// and the file has NVTX ranges, API calls and kernels. `share_launches`: the flows read the
/// kernel launches too, from the pass.
pub fn plan(
    schema: &Schema,
    imp: &Importer,
    share_launches: bool,
    early: Option<Receiver<Result<GpuIndex>>>,
) -> Result<Option<(StreamDef, Pass)>> {
    let Some((n, r, k)) = tables(schema, imp.options()) else {
        return Ok(None);
    };
    let mut params = Vec::new();
    let filter = prefix_filter(&n, "n.", imp.nvtx_prefixes(), &mut params);
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
    let projections = Arc::new(Spool::new(COLUMNS.split(',').count())?);
    let launch_spool = match share_launches {
        true => Some(Arc::new(Spool::new(LAUNCH_COLUMNS)?)),
        false => None,
    };
    let stream = StreamDef::spooled(
        "tracex_nvtx_projection",
        projections.clone(),
        Kind::Projection,
    );
    Ok(Some((
        stream,
        Pass {
            ranges,
            launches: LaunchJoin::new(&r, &k),
            table: n.name.clone(),
            projections,
            launch_spool,
            early: Mutex::new(early),
        },
    )))
}

/// An integer column of a row, `None` for anything else.
fn int(row: &rusqlite::Row, i: usize) -> Option<i64> {
    match row.get_ref(i) {
        Ok(ValueRef::Integer(v)) => Some(v),
        _ => None,
    }
}

/// A push/pop range as the pass reads it.
struct RangeRow {
    rowid: i64,
    start: i64,
    end: Option<i64>,
    gtid: i64,
    name: String,
}

/// A kernel launch: the call's start and thread, the kernel's start, end, device, process.
#[derive(Clone, Copy)]
struct LaunchRow {
    ts: i64,
    gtid: i64,
    ks: i64,
    ke: Option<i64>,
    device: i64,
    gpid: i64,
}

/// The next usable range (rowid, start, end, gtid, name); rows without a time or thread are
/// skipped (the main pass counts them).
fn next_range(rows: &mut rusqlite::Rows) -> rusqlite::Result<Option<RangeRow>> {
    while let Some(r) = rows.next()? {
        if let (Some(rowid), Some(start), Some(gtid)) = (int(r, 0), int(r, 1), int(r, 3)) {
            let name = match r.get_ref(4)? {
                ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                _ => "[unnamed NVTX range]".into(),
            };
            return Ok(Some(RangeRow {
                rowid,
                start,
                end: int(r, 2),
                gtid,
                name,
            }));
        }
    }
    Ok(None)
}

/// A launch of the join ([`crate::join`]: r.rowid, r.start, r.globalTid, g.rowid, g.start,
/// g.end, g.deviceId, g.contextId, g.streamId, g.globalPid), or `None` for one the sweep cannot
/// use.
fn launch_of(r: &[SqlValue]) -> Option<LaunchRow> {
    let int = |i: usize| match r.get(i) {
        Some(SqlValue::Integer(v)) => Some(*v),
        _ => None,
    };
    match (int(1), int(2), int(4), int(6), int(9)) {
        (Some(ts), Some(gtid), Some(ks), Some(device), Some(gpid)) => Some(LaunchRow {
            ts,
            gtid,
            ks,
            ke: int(5),
            device,
            gpid,
        }),
        _ => None,
    }
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

/// A finished projection waiting for its turn, ordered as the merge orders slices.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Finished {
    start: i64,
    neg_end: std::cmp::Reverse<i64>,
    nvtx_rowid: i64,
    machine: i64,
    device: i64,
    gtid: i64,
    kernels: i64,
    name: String,
}

impl Finished {
    /// The row the merge receives (no table row: rowid 0).
    fn row(self) -> [SqlValue; 9] {
        [
            SqlValue::Integer(0),
            SqlValue::Integer(self.start),
            SqlValue::Integer(self.neg_end.0),
            SqlValue::Integer(self.machine),
            SqlValue::Integer(self.device),
            SqlValue::Text(self.name),
            SqlValue::Integer(self.gtid),
            SqlValue::Integer(self.nvtx_rowid),
            SqlValue::Integer(self.kernels),
        ]
    }
}

/// Projections are handed to the merge every this many input rows.
const RELEASE_EVERY: u32 = 1024;
/// Finished projections kept in memory before they go to the temporary table (when a long
/// range holds many later ones back).
const SPILL_AT: usize = 1 << 16;

/// The columns of a projection row as the merge receives it.
const COLUMNS: &str = "rowid, start, end, machine, device, name, gtid, nvtx_rowid, kernels";

/// Finished projections until their turn: a heap in memory, spilling to a temporary table.
struct Waiting<'c> {
    heap: BinaryHeap<Reverse<Finished>>,
    spill_at: usize,
    spilled: bool,
    insert: rusqlite::Statement<'c>,
    ready: rusqlite::Statement<'c>,
    forget: rusqlite::Statement<'c>,
}

impl<'c> Waiting<'c> {
    fn new(conn: &'c Connection, spill_at: usize) -> rusqlite::Result<Waiting<'c>> {
        conn.execute_batch(&format!(
            "DROP TABLE IF EXISTS {TABLE}; CREATE TABLE {TABLE} (start INTEGER, end INTEGER, \
             machine INTEGER, device INTEGER, name TEXT, gtid INTEGER, nvtx_rowid INTEGER, \
             kernels INTEGER); CREATE INDEX {TABLE}_order ON tracex_nvtx_projection \
             (start, end DESC, nvtx_rowid)"
        ))?;
        Ok(Waiting {
            heap: BinaryHeap::new(),
            spill_at,
            spilled: false,
            insert: conn.prepare(&format!(
                "INSERT INTO {TABLE} VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
            ))?,
            ready: conn.prepare(&format!(
                "SELECT {COLUMNS} FROM {TABLE} WHERE start < ?1 ORDER BY start, end DESC, nvtx_rowid"
            ))?,
            forget: conn.prepare(&format!("DELETE FROM {TABLE} WHERE start < ?1"))?,
        })
    }

    fn add(&mut self, o: Open) -> rusqlite::Result<()> {
        for c in o.gpus {
            self.heap.push(Reverse(Finished {
                start: c.first,
                neg_end: Reverse(c.last),
                nvtx_rowid: o.rowid,
                machine: c.gpu.0,
                device: c.gpu.1,
                gtid: o.gtid,
                kernels: c.kernels,
                name: o.name.clone(),
            }));
        }
        if self.heap.len() >= self.spill_at {
            self.spilled = true;
            for Reverse(f) in self.heap.drain() {
                self.insert.execute(rusqlite::params![
                    f.start,
                    f.neg_end.0,
                    f.machine,
                    f.device,
                    f.name,
                    f.gtid,
                    f.nvtx_rowid,
                    f.kernels
                ])?;
            }
        }
        Ok(())
    }

    /// Writes every waiting projection that starts before `below`, in order, and publishes
    /// them.
    fn release(&mut self, below: i64, out: &mut SpoolWriter) -> Result<()> {
        let err = |e| sqlite_error(Location::Nowhere, "cannot keep NVTX projections", e);
        let mut from_table = Vec::new();
        if self.spilled {
            let mut rows = self.ready.query([below]).map_err(err)?;
            while let Some(r) = rows.next().map_err(err)? {
                from_table.push(Finished {
                    start: int(r, 1).unwrap_or(0),
                    neg_end: Reverse(int(r, 2).unwrap_or(0)),
                    machine: int(r, 3).unwrap_or(0),
                    device: int(r, 4).unwrap_or(0),
                    name: r.get::<_, String>(5).map_err(err)?,
                    gtid: int(r, 6).unwrap_or(0),
                    nvtx_rowid: int(r, 7).unwrap_or(0),
                    kernels: int(r, 8).unwrap_or(0),
                });
            }
            self.forget.execute([below]).map_err(err)?;
        }
        let mut table = from_table.into_iter().peekable();
        loop {
            let from_heap = match (self.heap.peek(), table.peek()) {
                (Some(Reverse(h)), Some(t)) if h.start < below => h < t,
                (Some(Reverse(h)), None) if h.start < below => true,
                (_, Some(_)) => false,
                _ => break,
            };
            let f = match from_heap {
                true => self.heap.pop().expect("peeked").0,
                false => table.next().expect("peeked"),
            };
            out.row(&f.row());
        }
        out.publish()
    }
}

/// Launch rows the flows read are published every this many.
const PUBLISH_LAUNCHES_EVERY: u32 = 256;

impl Pass {
    /// Ends the spools as failed, when the pass cannot run at all.
    pub fn fail(&self, why: Failure) {
        if let Some(l) = &self.launch_spool {
            l.fail(why.clone());
        }
        self.projections.fail(why);
    }

    /// Runs the pass on `conn`, ending the spools it writes (with the reason if it fails).
    pub fn run(&self, conn: &Connection, orders: &Orders) {
        let (mut projections, mut launches) = match (
            self.projections.writer(),
            self.launch_spool.as_ref().map(|s| s.writer()).transpose(),
        ) {
            (Ok(p), Ok(l)) => (p, l),
            (Err(e), _) | (_, Err(e)) => return self.fail(Failure::of(&e)),
        };
        let result = self.sweep(conn, orders, &mut projections, &mut launches);
        let failed = result.err().map(|e| Failure::of(&e));
        if let Some(l) = launches {
            l.finish(failed.clone());
        }
        projections.finish(failed);
    }

    /// Sweeps ranges and launches, and hands finished projections to the merge in time order
    /// as soon as no later one can start earlier: a projection's start is its first kernel's,
    /// and a kernel starts after its launch, so nothing still to come starts before the
    /// sweep's position or before the first kernel of a range still open.
    fn sweep(
        &self,
        conn: &Connection,
        orders: &Orders,
        projections: &mut SpoolWriter,
        launch_out: &mut Option<SpoolWriter>,
    ) -> Result<()> {
        let at = Location::Row {
            table: self.table.clone(),
            rowid: 0,
        };
        let err = |e| sqlite_error(at.clone(), "cannot project NVTX ranges onto kernels", e);
        let mut sweep = Sweep {
            waiting: Waiting::new(conn, SPILL_AT).map_err(err)?,
            open: FxHashMap::default(),
            done: Vec::new(),
            since_release: 0,
            projections,
        };
        // the GPU side first: choosing the ranges' query may wait for other tables' order checks
        let early = self.early.lock().unwrap_or_else(|p| p.into_inner()).take();
        let index = match early.and_then(|rx| rx.recv().ok()) {
            Some(index) => index?,
            None => self.launches.index(conn)?,
        };
        let mut ranges_stmt = conn.prepare(self.ranges.sql(conn, orders)).map_err(err)?;
        let mut ranges = ranges_stmt
            .query(rusqlite::params_from_iter(self.ranges.params.iter()))
            .map_err(err)?;
        let mut range = next_range(&mut ranges).map_err(err)?;
        let mut since_publish = 0;
        self.launches.run_indexed(conn, orders, index, |row| {
            if let Some(w) = launch_out.as_mut() {
                w.row(row);
            }
            // a launch the sweep cannot use (the flows still get it)
            if let Some(l) = launch_of(row) {
                // at equal times the range comes first: a launch at its start is inside it
                while let Some(n) = range.take_if(|n| n.start <= l.ts) {
                    sweep.range(n)?;
                    range = next_range(&mut ranges).map_err(err)?;
                }
                sweep.launch(l)?;
            }
            since_publish += 1;
            if since_publish >= PUBLISH_LAUNCHES_EVERY {
                since_publish = 0;
                if let Some(w) = launch_out.as_mut() {
                    w.publish()?;
                }
            }
            Ok(true)
        })?;
        while let Some(n) = range.take() {
            sweep.range(n)?;
            range = next_range(&mut ranges).map_err(err)?;
        }
        for o in sweep.open.into_values().flatten() {
            sweep.waiting.add(o).map_err(err)?;
        }
        sweep.waiting.release(i64::MAX, sweep.projections)
    }
}

/// The state of the sweep.
struct Sweep<'c, 'w, 'p> {
    waiting: Waiting<'c>,
    open: FxHashMap<i64, Vec<Open>>,
    done: Vec<Open>,
    since_release: u32,
    projections: &'p mut SpoolWriter<'w>,
}

impl Sweep<'_, '_, '_> {
    fn range(&mut self, n: RangeRow) -> Result<()> {
        close(&mut self.open, n.gtid, n.start, &mut self.done);
        self.open.entry(n.gtid).or_default().push(Open {
            end: n.end.unwrap_or(i64::MAX),
            rowid: n.rowid,
            gtid: n.gtid,
            name: n.name,
            gpus: Vec::new(),
        });
        self.step(n.start)
    }

    fn launch(&mut self, l: LaunchRow) -> Result<()> {
        close(&mut self.open, l.gtid, l.ts, &mut self.done);
        // GPU work that starts before its launch gets no flow either; leaving it out keeps
        // every projection at or after the sweep position.
        if let (Some(stack), true) = (self.open.get_mut(&l.gtid), l.ks > l.ts) {
            let ke = l.ke.unwrap_or(l.ks).max(l.ks);
            cover(stack, (GlobalId(l.gpid).machine(), l.device), l.ks, ke);
        }
        self.step(l.ts)
    }

    /// After each range or launch at time `now`: finished projections wait; every
    /// [`RELEASE_EVERY`] steps, those that can no longer be preceded go to the merge.
    fn step(&mut self, now: i64) -> Result<()> {
        let err = |e| sqlite_error(Location::Nowhere, "cannot keep NVTX projections", e);
        for o in self.done.drain(..) {
            self.waiting.add(o).map_err(err)?;
        }
        self.since_release += 1;
        if self.since_release < RELEASE_EVERY {
            return Ok(());
        }
        self.since_release = 0;
        // ranges of quiet threads end too
        let threads: Vec<i64> = self.open.keys().copied().collect();
        for gtid in threads {
            close(&mut self.open, gtid, now, &mut self.done);
        }
        for o in self.done.drain(..) {
            self.waiting.add(o).map_err(err)?;
        }
        let open_first = self
            .open
            .values()
            .flatten()
            .flat_map(|o| o.gpus.iter().map(|c| c.first))
            .min()
            .unwrap_or(i64::MAX);
        self.waiting.release(now.min(open_first), self.projections)
    }
}

/// A projected range.
pub fn decode_projection(imp: &mut Importer, row: &Row, defs: &mut Defs) -> Decoded {
    let mut c = Cols::new(row);
    let start = c.int("start")?;
    let end = c.int("end")?;
    let machine = c.int("machine")?;
    let device = c.int("device")?;
    let name = c.opt_text().unwrap_or_default();
    let gtid = c.int("gtid")?;
    let nvtx_rowid = c.int("nvtx_rowid")?;
    let kernels = c.int("kernels")?;
    let dev = imp.device(defs, machine, device);
    let track_name = defs.intern("NVTX ranges (GPU time)");
    let track = imp.async_track(defs, dev, track_name);
    let name = defs.intern(&name);
    let mut args = Vec::with_capacity(4);
    imp.arg(defs, &mut args, "pid", || Value::Int(GlobalId(gtid).pid()));
    imp.arg(defs, &mut args, "tid", || Value::Int(GlobalId(gtid).tid()));
    imp.arg(defs, &mut args, "kernels", || Value::Int(kernels));
    imp.arg(defs, &mut args, "nvtx_rowid", || Value::Int(nvtx_rowid));
    let color = imp.color_of(defs, name);
    let parts = Parts {
        track,
        ts: start,
        name,
        cat: imp.keys().cat_nvtx_kernel,
        args,
    };
    Ok(Some((
        parts.slice(Some((end - start).max(0)), None, color),
        Hook::None,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_range(rowid: i64, first: i64, last: i64) -> Open {
        Open {
            end: last,
            rowid,
            gtid: 7,
            name: format!("r{rowid}"),
            gpus: vec![Coverage {
                gpu: (1, 0),
                first,
                last,
                kernels: 1,
            }],
        }
    }

    #[test]
    fn waiting_projections_leave_in_order_from_memory_and_the_spill() {
        let conn = Connection::open_in_memory().unwrap();
        let mut w = Waiting::new(&conn, 4).unwrap();
        // eleven projections in scrambled order; the heap spills twice
        for (i, start) in [50, 10, 30, 10, 70, 20, 60, 40, 90, 80, 5]
            .into_iter()
            .enumerate()
        {
            w.add(open_range(i as i64, start, start + 100 - i as i64))
                .unwrap();
        }
        let spool = Spool::new(9).unwrap();
        let mut out = spool.writer().unwrap();
        w.release(45, &mut out).unwrap();
        w.release(i64::MAX, &mut out).unwrap();
        out.finish(None);
        let mut r = spool.reader().unwrap();
        let mut starts = Vec::new();
        while let crate::spool::Next::Rows(v) = r.next().unwrap() {
            starts.extend(v.to_rows(9).into_iter().map(|row| row[1].clone()));
        }
        let want: Vec<SqlValue> = [5, 10, 10, 20, 30, 40, 50, 60, 70, 80, 90]
            .into_iter()
            .map(SqlValue::Integer)
            .collect();
        assert_eq!(starts, want);
    }
}
