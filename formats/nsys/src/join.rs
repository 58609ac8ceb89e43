//! The launch join in tracex instead of SQL: API calls with the GPU work they launched, on
//! (process, correlationId). SQLite ran it as a nested loop over an automatic index that it
//! rebuilt on every run (a B-tree insert per GPU row, a B-tree search per API call: a third of
//! an import in the profiles); here the GPU rows are read once into a vector sized from
//! `count(*)` and found by a dense array per process (correlation ids are per-process counters),
//! and API calls not stored in time order are put in it by tracex instead of SQLite's sorter:
//! reordered as they are read when their table is close to time order ([`calls_near`]), read
//! whole and sorted otherwise.
//!
//! Rows come out as the SQL join gave them: [`LAUNCH_COLUMNS`] values (r.rowid, r.start,
//! r.globalTid, g.rowid, then [`GPU_COLUMNS`]), in API-call order (`start`, then rowid; the rowid
//! order when the table is stored in time order) and, for one call, in GPU rowid order. Values
//! that are not integers or NULL are kept as they are (they only name what is wrong).
//! Memory: 76 bytes per GPU row (its cells and its place in the order; up to 24 more while the
//! order is sorted, and 72 more while rows stored far from that order are copied into it), and
//! 40 per API call for a table far from time order (a few thousand calls
//! at most for one close to it).

use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::Connection;
use rustc_hash::FxHashMap;
use tracex_ir::{Location, Result};

use crate::catalogue::COMMON;
use crate::db::{owned, table_changed, Table};
use crate::held::Held;
use crate::idmap::IdMap;
use crate::order::{NearlySorted, Order, OrderCheck, Orders};
use crate::scan::{row_count, Filter, ScanRow, ScanRows, ScanSpec};

/// The join of the API calls of `api` with the GPU rows of `gpu`.
#[derive(Clone, Debug)]
pub struct LaunchJoin {
    api: Table,
    gpu: Table,
}

/// One cell: NULL, an integer, or another value kept aside (by row and column).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tag {
    Null,
    Int,
    Odd,
}

/// Integer cells inline, column 0 being the rowid; anything else in `odd`, by rowid and
/// column (so that rows can be sorted in place).
struct Cells<const N: usize> {
    rows: Vec<([i64; N], [Tag; N])>,
    odd: FxHashMap<(i64, u8), SqlValue>,
}

impl<const N: usize> Cells<N> {
    fn with_capacity(n: usize) -> Self {
        Cells {
            rows: Vec::with_capacity(n),
            odd: FxHashMap::default(),
        }
    }

    /// Appends the first `N` columns of `row`, the first one being its rowid.
    fn push(&mut self, row: &ScanRow) {
        self.push_cells(|i| row.get(i));
    }

    fn clear(&mut self) {
        self.rows.clear();
        self.odd.clear();
    }

    /// Appends the first `N` cells that `cell` gives, the first one being the rowid.
    fn push_cells<'v>(&mut self, cell: impl Fn(usize) -> ValueRef<'v>) {
        let mut v = [0i64; N];
        let mut t = [Tag::Null; N];
        for i in 0..N {
            match cell(i) {
                ValueRef::Null => {}
                ValueRef::Integer(x) => (v[i], t[i]) = (x, Tag::Int),
                other => {
                    t[i] = Tag::Odd;
                    self.odd.insert((v[0], i as u8), owned(other));
                }
            }
        }
        self.rows.push((v, t));
    }

    fn int(&self, row: usize, col: usize) -> Option<i64> {
        let (v, t) = &self.rows[row];
        (t[col] == Tag::Int).then_some(v[col])
    }

    fn value(&self, row: usize, col: usize) -> SqlValue {
        let (v, t) = &self.rows[row];
        match t[col] {
            Tag::Null => SqlValue::Null,
            Tag::Int => SqlValue::Integer(v[col]),
            Tag::Odd => self.odd[&(v[0], col as u8)].clone(),
        }
    }
}

/// The GPU columns a launch reads to know that its GPU row will be emitted (the ones
/// [`crate::gpu::decode_gpu`] rejects a row for), then the process (for the nvtx-kernel pass):
/// `start` … `globalPid`, and the correlation id (the flow's id, as Kineto's): the head of
/// [`COMMON`].
pub const GPU_COLUMNS: &[&str] = COMMON.split_at(7).0;

/// Columns of a launch row: r.rowid, r.start, r.globalTid, g.rowid, then [`GPU_COLUMNS`].
pub const LAUNCH_COLUMNS: usize = 4 + GPU_COLUMNS.len();

/// GPU columns read: the rowid, then [`GPU_COLUMNS`].
const G: usize = 1 + GPU_COLUMNS.len();
const G_PID: usize = 6;
const G_CORR: usize = 7;
/// API columns read: rowid, start, globalTid, correlationId.
const A: usize = 4;

/// The GPU rows in storage order and their order by (process, correlation id, rowid), or the
/// rows in that order (`order` empty) when storage is far from it; and per process where the
/// rows of each correlation id start in that order.
pub struct GpuIndex {
    cells: Cells<G>,
    order: Vec<u32>,
    by_process: FxHashMap<i64, IdMap>,
}

/// The process part of a globalPid or globalTid (the join's `>> 24`).
fn process_of(global: i64) -> i64 {
    global >> 24
}

impl GpuIndex {
    fn load(conn: &Connection, g: &Table) -> Result<GpuIndex> {
        let n = row_count(conn, g)? as usize;
        let sql = format!(
            "SELECT rowid, {} FROM {}",
            g.select_list(GPU_COLUMNS),
            g.sql_name()
        );
        let mut stmt = None;
        let spec = ScanSpec::new(g, GPU_COLUMNS);
        let doing = (g.name.as_str(), "cannot read GPU work for the launch join");
        let mut rows = ScanRows::open(conn, (&sql, &[]), Some(&spec), &mut stmt, doing)?;
        let mut cells = Cells::<G>::with_capacity(n);
        while let Some(r) = rows.next()? {
            // rows that cannot join are not kept
            if let (ValueRef::Integer(_), ValueRef::Integer(_)) = (r.get(G_PID), r.get(G_CORR)) {
                cells.push(&r);
            }
        }
        if cells.rows.len() >= u32::MAX as usize {
            return Err(tracex_ir::Error::invalid(
                Location::Nowhere,
                format!("table {} has too many rows for the launch join", g.name),
            ));
        }
        let (mut order, groups) = sorted_order(&cells.rows);
        if far_from_storage(&order) {
            // one pass of independent loads here, where the join would miss on every row
            cells.rows = order.iter().map(|&i| cells.rows[i as usize]).collect();
            order = Vec::new();
        }
        let by_process = groups
            .into_iter()
            .map(|g| {
                // the first position of each correlation id (ids are counters: dense within a
                // process), from the group's sorted ids rather than from the rows (a cache miss
                // each at 1M rows)
                let firsts = (0..g.ids.len())
                    .filter(|&k| k == 0 || g.ids[k - 1] != g.ids[k])
                    .map(|k| (g.ids[k], (g.start + k) as u32));
                (g.process, IdMap::new(firsts, 4))
            })
            .collect();
        Ok(GpuIndex {
            cells,
            order,
            by_process,
        })
    }

    /// The rows of (`process`, `corr`), in rowid order.
    fn find(&self, process: i64, corr: i64) -> impl Iterator<Item = usize> + '_ {
        let first = self.by_process.get(&process).and_then(|m| m.get(corr));
        let rows = &self.cells.rows;
        let from = first.map_or(rows.len(), |f| f as usize);
        let order = &self.order;
        (from..rows.len())
            .map(move |p| {
                if order.is_empty() {
                    p
                } else {
                    order[p] as usize
                }
            })
            .take_while(move |&k| {
                rows[k].0[G_CORR] == corr && process_of(rows[k].0[G_PID]) == process
            })
    }
}

/// Steps of the index's order that land further than this many rows from the last.
const NEAR_ROWS: u32 = 64;

/// Whether the index's order jumps around storage on a quarter of its steps or more: rows
/// stored in no useful order (shuffled). Tables in time order jump on a few percent of steps
/// (kernels of several streams); there the rows stay in place, which saves a copy of them.
fn far_from_storage(order: &[u32]) -> bool {
    let far = order
        .windows(2)
        .filter(|w| w[0].abs_diff(w[1]) > NEAR_ROWS)
        .count();
    far > order.len() / 4
}

/// A GPU row of the index.
type GpuRow = ([i64; G], [Tag; G]);

/// The index's order: process, correlation id, rowid.
fn gpu_key(r: &GpuRow) -> (i64, i64, i64) {
    (process_of(r.0[G_PID]), r.0[G_CORR], r.0[0])
}

/// Processes beyond which [`sorted_order`] sorts all rows at once.
const MAX_GROUPS: usize = 64;

/// The rows of one process in [`sorted_order`]: where they start in the order, and their
/// correlation ids in that order.
struct Group {
    process: i64,
    start: usize,
    ids: Vec<i64>,
}

/// The indices of `rows` (fewer than `u32::MAX`, read in rowid order) in [`gpu_key`] order,
/// with little work: grouped by process (few), each group sorted ([`sort_group`]). The rows
/// stay where they are: sorting the 72-byte rows by a three-part key was 13% of the index
/// thread (callgrind), and moving them along the order cost a cache miss per row at 1M rows;
/// the join reads them in launch order, close to storage order. Unless storage is far from it
/// ([`far_from_storage`]): then the join missed on every row, and the rows are copied into
/// the order once.
fn sorted_order(rows: &[GpuRow]) -> (Vec<u32>, Vec<Group>) {
    let mut members: Vec<(i64, Vec<u32>)> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let p = process_of(r.0[G_PID]);
        match members.iter().position(|g| g.0 == p) {
            Some(g) => members[g].1.push(i as u32),
            None if members.len() < MAX_GROUPS => members.push((p, vec![i as u32])),
            None => return sorted_at_once(rows),
        }
    }
    members.sort_unstable_by_key(|g| g.0);
    let mut order: Vec<u32> = Vec::with_capacity(rows.len());
    let mut groups = Vec::with_capacity(members.len());
    for (process, mut group) in members {
        let ids = sort_group(rows, &mut group);
        let start = order.len();
        order.append(&mut group);
        groups.push(Group {
            process,
            start,
            ids,
        });
    }
    (order, groups)
}

/// [`sorted_order`] for rows of many processes: one sort of all indices.
fn sorted_at_once(rows: &[GpuRow]) -> (Vec<u32>, Vec<Group>) {
    let mut order: Vec<u32> = (0..rows.len() as u32).collect();
    order.sort_unstable_by_key(|&i| gpu_key(&rows[i as usize]));
    let mut groups: Vec<Group> = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        let (p, corr, _) = gpu_key(&rows[i as usize]);
        match groups.last_mut() {
            Some(g) if g.process == p => g.ids.push(corr),
            _ => groups.push(Group {
                process: p,
                start: k,
                ids: vec![corr],
            }),
        }
    }
    (order, groups)
}

/// Sorts the indices of one process's rows by (correlation id, rowid); returns their ids in
/// that order. Kernels on several streams start in another order than they were launched, so
/// a group is seldom in order; it is sorted as 8-byte keys (the id's offset from the
/// smallest, then the index, which follows the rowid) when the ids span less than 2^32, as
/// they do.
fn sort_group(rows: &[GpuRow], group: &mut [u32]) -> Vec<i64> {
    let corr = |i: u32| rows[i as usize].0[G_CORR];
    if group.is_sorted_by_key(|&i| (corr(i), i)) {
        return group.iter().map(|&i| corr(i)).collect();
    }
    let (min, max) = group.iter().fold((i64::MAX, i64::MIN), |(lo, hi), &i| {
        (lo.min(corr(i)), hi.max(corr(i)))
    });
    if (max as i128 - min as i128) >= 1 << 32 {
        group.sort_unstable_by_key(|&i| (corr(i), i));
        return group.iter().map(|&i| corr(i)).collect();
    }
    let mut keys: Vec<u64> = (group.iter())
        .map(|&i| ((corr(i) - min) as u64) << 32 | i as u64)
        .collect();
    keys.sort_unstable();
    let mut ids = Vec::with_capacity(keys.len());
    for (slot, k) in group.iter_mut().zip(keys) {
        *slot = k as u32;
        ids.push(min + (k >> 32) as i64);
    }
    ids
}

impl LaunchJoin {
    pub fn new(api: &Table, gpu: &Table) -> LaunchJoin {
        LaunchJoin {
            api: api.clone(),
            gpu: gpu.clone(),
        }
    }

    /// The API table (for error locations).
    pub fn api_table(&self) -> &Table {
        &self.api
    }

    /// Reads the GPU side of the join, the longest part of it before the first row: done
    /// before anything that waits for other threads (order checks).
    pub fn index(&self, conn: &Connection) -> Result<GpuIndex> {
        GpuIndex::load(conn, &self.gpu)
    }

    /// Runs the join on `conn`, handing each row to `f` in order; `f` returns false to stop.
    pub fn run(
        &self,
        conn: &Connection,
        orders: &Orders,
        f: impl FnMut(&[SqlValue]) -> Result<bool>,
    ) -> Result<()> {
        self.run_indexed(conn, orders, self.index(conn)?, f)
    }

    /// [`LaunchJoin::run`] with the GPU side already read.
    pub fn run_indexed(
        &self,
        conn: &Connection,
        orders: &Orders,
        index: GpuIndex,
        mut f: impl FnMut(&[SqlValue]) -> Result<bool>,
    ) -> Result<()> {
        let r = &self.api;
        let class = match r.has("eventClass") {
            true => format!(" WHERE {} IN (0, 1)", r.col("eventClass")),
            false => String::new(),
        };
        let columns = ["start", "globalTid", "correlationId"];
        let sql = format!(
            "SELECT rowid, {} FROM {}{class}",
            r.select_list(&columns),
            r.sql_name()
        );
        let mut spec = ScanSpec::new(r, &columns);
        if r.has("eventClass") {
            spec = spec.filtered("eventClass", Filter::In(vec![0, 1]));
        }
        let check = OrderCheck {
            table: r.clone(),
            ts: "start",
            end: Some("end"),
        };
        let order = orders.order(conn, &check);
        let mut stmt = None;
        let doing = (r.name.as_str(), "cannot read API calls for the launch join");
        let mut rows = ScanRows::open(conn, (&sql, &[]), Some(&spec), &mut stmt, doing)?;
        let mut out: [SqlValue; LAUNCH_COLUMNS] = std::array::from_fn(|_| SqlValue::Null);
        let mut emit = |api: &Cells<A>, i: usize| -> Result<bool> {
            let (Some(gtid), Some(corr)) = (api.int(i, 2), api.int(i, 3)) else {
                return Ok(true);
            };
            for k in index.find(process_of(gtid), corr) {
                let (call, gpu) = out.split_at_mut(3);
                for (c, cell) in call.iter_mut().enumerate() {
                    *cell = api.value(i, c);
                }
                for (c, cell) in gpu.iter_mut().enumerate() {
                    *cell = index.cells.value(k, c);
                }
                if !f(&out)? {
                    return Ok(false);
                }
            }
            Ok(true)
        };
        if let Order::Near(near) = &*order {
            return calls_near(&mut rows, near, emit).map_err(|e| {
                e.unwrap_or_else(|| {
                    table_changed(Location::Row {
                        table: r.name.clone(),
                        rowid: 0,
                    })
                })
            });
        }
        if matches!(*order, Order::Sorted) {
            // one call at a time, in storage order
            let mut one = Cells::<A>::with_capacity(1);
            while let Some(row) = rows.next()? {
                one.clear();
                one.push(&row);
                if !emit(&one, 0)? {
                    return Ok(());
                }
            }
            return Ok(());
        }
        let n = row_count(conn, r)? as usize;
        let mut calls = Cells::<A>::with_capacity(n);
        while let Some(row) = rows.next()? {
            calls.push(&row);
        }
        drop(rows);
        // SQLite's order: NULL, then numbers, then the rest (text, blobs); then the rowid
        calls.rows.sort_unstable_by_key(|(v, t)| {
            let class = match t[1] {
                Tag::Null => 0,
                Tag::Int => 1,
                Tag::Odd => 2,
            };
            (class, v[1], v[0])
        });
        for i in 0..calls.rows.len() {
            if !emit(&calls, i)? {
                break;
            }
        }
        Ok(())
    }
}

/// The API calls of a table stored close to time order, handed to `emit` in the join's order
/// (`start`, then rowid) as they are read: held back as `near`'s schedule says, the calls of
/// one `start` put in rowid order (the schedule puts longer calls first). Reading them all and
/// sorting them held up the nvtx-kernel pass, and the merge that waits for it, at the start of
/// such an import; and took 40 bytes a call. `Err(None)`: the table does not match the
/// schedule (it changed while tracex read it).
fn calls_near(
    rows: &mut ScanRows,
    near: &NearlySorted,
    mut emit: impl FnMut(&Cells<A>, usize) -> Result<bool>,
) -> std::result::Result<(), Option<tracex_ir::Error>> {
    let mut held = Held::new(near.depth, A);
    // the scheduled calls of one start, by their place in `held`
    let mut group: Vec<usize> = Vec::new();
    let mut group_start = None;
    let mut one = Cells::<A>::with_capacity(1);
    for &rowid in &near.schedule {
        held.read_past(rows, rowid)?;
        // the call of `rowid`: none when the query filters it out
        let Some(i) = held.find(rowid) else {
            continue;
        };
        let start = match held.row(i).get(1) {
            ValueRef::Integer(s) => Some(s),
            _ => None,
        };
        let i = if group_start != Some(start) {
            if !emit_group(&held, &mut group, &mut one, &mut emit)? {
                return Ok(());
            }
            group_start = Some(start);
            // between groups, so that `group`'s places stay valid; places may move
            held.drop_taken();
            held.find(rowid).expect("a row not handed on stays held")
        } else {
            i
        };
        held.take_if(i, rowid);
        group.push(i);
    }
    if !emit_group(&held, &mut group, &mut one, &mut emit)? {
        return Ok(());
    }
    held.drop_taken();
    if !held.is_empty() || rows.next()?.is_some() {
        return Err(None);
    }
    Ok(())
}

/// Hands on the calls of `group` (places in `held`) in rowid order, through `one`, and empties
/// it; false when `emit` said to stop.
fn emit_group(
    held: &Held,
    group: &mut Vec<usize>,
    one: &mut Cells<A>,
    emit: &mut impl FnMut(&Cells<A>, usize) -> Result<bool>,
) -> Result<bool> {
    // places rise with rowids
    group.sort_unstable();
    for &i in group.iter() {
        one.clear();
        let row = held.row(i);
        one.push_cells(|c| row.get(c));
        if !emit(one, 0)? {
            return Ok(false);
        }
    }
    group.clear();
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Schema;

    /// Grouping by process and sorting each group give the order of a plain sort:
    /// interleaved processes in order, groups out of order, repeated ids, many processes.
    #[test]
    fn sorted_order_is_a_sort() {
        let row = |rowid: i64, pid: i64, corr: i64| {
            let mut v = [0i64; G];
            (v[0], v[G_PID], v[G_CORR]) = (rowid, pid << 24, corr);
            (v, [Tag::Int; G])
        };
        let mut state = 7u64;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        for (processes, shuffled) in [(1, false), (2, false), (3, true), (200, false), (5, true)] {
            let mut rows: Vec<GpuRow> = Vec::new();
            let mut corr = vec![0i64; processes];
            for rowid in 1..=5000 {
                let p = next(processes as u64) as usize;
                // mostly counting; sometimes repeated (a graph launch), sometimes out of order
                corr[p] += match next(10) {
                    0 => 0,
                    _ => 1,
                };
                let c = match shuffled && next(4) == 0 {
                    true => next(5000) as i64,
                    false => corr[p],
                };
                rows.push(row(rowid, p as i64, c));
            }
            let mut want = rows.clone();
            want.sort_unstable_by_key(gpu_key);
            let (order, groups) = sorted_order(&rows);
            let got: Vec<_> = order.iter().map(|&i| gpu_key(&rows[i as usize])).collect();
            let want: Vec<_> = want.iter().map(gpu_key).collect();
            assert_eq!(got, want, "{processes} processes");
            // each group: its process's positions and their ids
            let mut k = 0;
            for g in groups {
                assert_eq!(g.start, k);
                for (j, &id) in g.ids.iter().enumerate() {
                    assert_eq!((g.process, id), (want[k + j].0, want[k + j].1));
                }
                k += g.ids.len();
            }
            assert_eq!(k, rows.len());
        }
    }

    /// An in-memory database with empty call and kernel tables.
    fn empty_tables() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER,
               globalTid INTEGER, correlationId INTEGER);
             CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
               contextId INTEGER, streamId INTEGER, globalPid INTEGER, correlationId INTEGER);",
        )
        .unwrap();
        conn
    }

    /// The rows of the SQL join tracex ran before this module, and those of [`LaunchJoin`].
    fn both_joins(conn: &Connection, orders: &Orders) -> (Vec<Vec<SqlValue>>, Vec<Vec<SqlValue>>) {
        let schema = Schema::probe(conn, &tracex_ir::Location::Nowhere).unwrap();
        let r = schema.table("CUPTI_ACTIVITY_KIND_RUNTIME").unwrap();
        let g = schema.table("CUPTI_ACTIVITY_KIND_KERNEL").unwrap();
        let sql = "SELECT r.rowid, r.start, r.globalTid, g.rowid, g.start, g.end, g.deviceId, \
             g.contextId, g.streamId, g.globalPid, g.correlationId \
             FROM CUPTI_ACTIVITY_KIND_RUNTIME r CROSS JOIN CUPTI_ACTIVITY_KIND_KERNEL g \
             ON g.correlationId = r.correlationId AND (g.globalPid >> 24) = (r.globalTid >> 24) \
             WHERE r.eventClass IN (0, 1) ORDER BY r.start, r.rowid, g.rowid";
        let mut stmt = conn.prepare(sql).unwrap();
        let want: Vec<Vec<SqlValue>> = stmt
            .query_map([], |row| {
                (0..LAUNCH_COLUMNS)
                    .map(|i| row.get::<_, SqlValue>(i))
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut got = Vec::new();
        LaunchJoin::new(&r, &g)
            .run(conn, orders, |row| {
                got.push(row.to_vec());
                Ok(true)
            })
            .unwrap();
        (want, got)
    }

    /// A call table close to time order (a few calls late, pairs of calls with one start, some
    /// with the later one longer, calls of another class between them) is joined as it is read,
    /// in the SQL join's order: by start, then rowid (not longer first, as the table's
    /// schedule has it).
    #[test]
    fn a_nearly_sorted_table_matches_the_sql_join() {
        let conn = empty_tables();
        let tid = (1i64 << 24) | 5;
        let mut calls: Vec<i64> = (0..200).collect();
        // three calls stored a few rows late
        for at in [40, 90, 150] {
            calls[at..at + 6].rotate_left(1);
        }
        for &i in &calls {
            let start = (i / 2) * 10;
            // the first of a pair is the longer one, but in every tenth pair the second
            let longer_first = (i / 2) % 10 != 3;
            let end = start + if (i % 2 == 0) == longer_first { 50 } else { 5 };
            let class = if i % 17 == 0 { 2 } else { 0 };
            conn.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![start, end, class, tid, i + 1],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?1 + 3, 0, 1, 7, ?2, ?3)",
                rusqlite::params![start + 1000, 1i64 << 24, i + 1],
            )
            .unwrap();
        }
        let schema = Schema::probe(&conn, &tracex_ir::Location::Nowhere).unwrap();
        let check = OrderCheck {
            table: schema.table("CUPTI_ACTIVITY_KIND_RUNTIME").unwrap(),
            ts: "start",
            end: Some("end"),
        };
        let orders = Orders::default();
        assert!(matches!(*orders.order(&conn, &check), Order::Near(_)));
        let (want, got) = both_joins(&conn, &orders);
        assert_eq!(got.len(), 200 - 12);
        assert_eq!(got, want);
    }

    /// GPU rows stored in no useful order are copied into the index's order, and the join still
    /// gives what the SQL join gave: two processes reusing ids, graph launches of three kernels
    /// (their rows far apart), calls shuffled too.
    #[test]
    fn a_shuffled_gpu_table_matches_the_sql_join() {
        let conn = empty_tables();
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let shuffled = |n: usize, next: &mut dyn FnMut(u64) -> u64| {
            let mut v: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                v.swap(i, next(i as u64 + 1) as usize);
            }
            v
        };
        let calls = 1500;
        let kernels: Vec<(i64, i64)> = (0..calls as i64)
            .flat_map(|i| {
                let copies = if i % 50 == 0 { 3 } else { 1 };
                (0..copies).map(move |_| ((1 + i % 2) << 24, i / 2 + 1))
            })
            .collect();
        for k in shuffled(kernels.len(), &mut next) {
            let (pid, corr) = kernels[k];
            conn.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?1 + 5, 0, 1, 7, ?2, ?3)",
                rusqlite::params![k as i64 * 10 + 5000, pid, corr],
            )
            .unwrap();
        }
        for i in shuffled(calls, &mut next) {
            let (tid, corr) = (((1 + i as i64 % 2) << 24) | 3, i as i64 / 2 + 1);
            conn.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?1 + 10, 0, ?2, ?3)",
                rusqlite::params![i as i64 * 10, tid, corr],
            )
            .unwrap();
        }
        let schema = Schema::probe(&conn, &tracex_ir::Location::Nowhere).unwrap();
        let g = schema.table("CUPTI_ACTIVITY_KIND_KERNEL").unwrap();
        let index = GpuIndex::load(&conn, &g).unwrap();
        assert!(
            index.order.is_empty(),
            "the rows were copied into the order"
        );
        let (want, got) = both_joins(&conn, &Orders::default());
        assert_eq!(got.len(), kernels.len());
        assert_eq!(got, want);
    }

    /// The join gives what the SQL join gave: every pair on (process, correlationId), calls in
    /// time order, GPU rows of one call in rowid order, across processes that reuse ids.
    #[test]
    fn matches_the_sql_join() {
        let conn = empty_tables();
        let p = |pid: i64| pid << 24;
        // calls out of time order, two processes reusing ids, a graph launch with three
        // kernels, a call without kernel, a kernel without call, a sparse id, a text start
        let calls: &[(i64, i64, i64, i64)] = &[
            (500, 0, p(1) | 1, 3),
            (100, 0, p(1) | 2, 1),
            (100, 1, p(2) | 2, 1),
            (300, 0, p(1) | 1, 2),
            (50, 0, p(2) | 3, 9_000_000_000),
            (700, 0, p(1) | 1, 4),
            (800, 2, p(1) | 1, 2),
        ];
        for &(s, class, tid, corr) in calls {
            conn.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?1 + 10, ?2, ?3, ?4)",
                rusqlite::params![s, class, tid, corr],
            )
            .unwrap();
        }
        conn.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ('soon', 1, 0, ?1, 1)",
            [p(2) | 2],
        )
        .unwrap();
        let kernels: &[(i64, i64, i64)] = &[
            (900, p(1), 2),
            (600, p(1), 3),
            (950, p(1), 2),
            (200, p(2), 1),
            (210, p(1), 1),
            (990, p(1), 2),
            (60, p(2), 9_000_000_000),
            (400, p(3), 1),
        ];
        for &(s, pid, corr) in kernels {
            conn.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?1 + 5, 0, 1, 7, ?2, ?3)",
                rusqlite::params![s, pid, corr],
            )
            .unwrap();
        }
        let (want, got) = both_joins(&conn, &Orders::default());
        assert_eq!(got.len(), 8);
        assert_eq!(got, want);
    }
}
