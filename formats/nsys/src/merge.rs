//! The k-way merge. Every stream is read on its own thread (own read-only connection), which
//! steps SQLite (or, for a plain scan, walks the table's pages: [`crate::pages`]) and hands rows
//! over in small batches through a bounded channel; the calling
//! thread decodes them and keeps each stream's next event in a heap keyed by the IR's total
//! order (time; slices, longer first; instants; flow points; counters; samples), emitting the
//! smallest. Memory: a few batches per stream plus the events made at emission time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use rusqlite::types::{Value as SqlValue, ValueRef};
use tracex_ir::order::OrderKey;
use tracex_ir::{Error, ImportCtx, Location, Progress, Result};

use crate::batch::{self, Batch};
use crate::db::{self, rowid, Row};
use crate::decoded::{Skip, Slot};
use crate::diag::record_skip;
use crate::dispatch::Decoder;
use crate::held::Held;
use crate::join::LaunchJoin;
use crate::order::{NearlySorted, Orders};

use crate::plan::{Plan, Query, Source, StreamDef};
use crate::projection::Pass;
use crate::scan::ScanRows;
use crate::shuffle::Shuffle;
use crate::spool::{Next, SpoolReader};

/// Rows per batch sent from a reader.
const BATCH_ROWS: usize = 256;
/// Batches a reader may run ahead of the merge.
const AHEAD: usize = 4;

/// What a reader sends: rows (flat, `columns` cells each), or the error that stopped it.
enum Msg {
    Rows { columns: usize, batch: Batch },
    Failed(Error),
}

/// A reader's end of its stream: batches go to the merge, and come back spent to be filled
/// again (emptied in no time: packed cells own nothing).
struct Link {
    tx: SyncSender<Msg>,
    spent: Receiver<Batch>,
}

impl Link {
    /// A link on which `ahead` batches may wait, and the merge's end of it: the batches, and
    /// where spent ones go back.
    fn new(ahead: usize) -> (Link, Receiver<Msg>, SyncSender<Batch>) {
        let (tx, rx) = sync_channel(ahead);
        // room for every batch there can be, so that the merge never waits to hand one back
        let (back, spent) = sync_channel(ahead + 2);
        (Link { tx, spent }, rx, back)
    }

    /// An empty batch for `cells` cells: a spent one when there is one.
    fn batch(&self, cells: usize) -> Batch {
        match self.spent.try_recv() {
            Ok(mut b) => {
                b.clear();
                b
            }
            Err(_) => Batch::with_capacity(cells),
        }
    }

    fn fail(&self, e: Error) {
        let _ = self.tx.send(Msg::Failed(e));
    }
}

/// Rows gathered into batches for the merge.
struct Batches<'a> {
    link: &'a Link,
    columns: usize,
    batch: Batch,
}

impl<'a> Batches<'a> {
    fn new(link: &'a Link, columns: usize) -> Self {
        let batch = link.batch(BATCH_ROWS * columns);
        Batches {
            link,
            columns,
            batch,
        }
    }

    /// Appends the next row of `rows`: `None` at their end, `Some(false)` when the merge has
    /// stopped.
    fn push_next(&mut self, rows: &mut ScanRows) -> Result<Option<bool>> {
        if !rows.next_packed(&mut self.batch)? {
            return Ok(None);
        }
        Ok(Some(self.flush_if_full()))
    }

    /// Appends a row of borrowed cells; false when the merge has stopped.
    fn extend_refs(&mut self, row: &[ValueRef]) -> bool {
        for &v in row {
            self.batch.push_ref(v);
        }
        self.flush_if_full()
    }

    /// Appends a row of values; false when the merge has stopped.
    fn extend(&mut self, row: &[SqlValue]) -> bool {
        for v in row {
            self.batch.push_value(v);
        }
        self.flush_if_full()
    }

    /// Appends a row of packed cells; false when the merge has stopped.
    fn extend_packed(&mut self, row: Row) -> bool {
        self.batch.push_cells(row.cells, row.texts);
        self.flush_if_full()
    }

    fn flush_if_full(&mut self) -> bool {
        if self.batch.cells.len() < BATCH_ROWS * self.columns
            && self.batch.bytes.len() < batch::MAX_BYTES
        {
            return true;
        }
        let next = self.link.batch(BATCH_ROWS * self.columns);
        let full = std::mem::replace(&mut self.batch, next);
        self.send(full)
    }

    fn send(&self, batch: Batch) -> bool {
        let columns = self.columns;
        self.link.tx.send(Msg::Rows { columns, batch }).is_ok()
    }

    /// Sends the last rows.
    fn finish(mut self) {
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            self.send(batch);
        }
    }
}

/// Runs `def`'s query on a connection of its own and sends the rows.
fn read(path: &Path, def: &StreamDef, query: &Query, orders: &Orders, link: &Link) -> Result<()> {
    let at = |rowid| Location::Row {
        table: def.table.clone(),
        rowid,
    };
    let conn = db::open(path)?;
    let plan = query.plan(&conn, orders);
    let sql = match &plan {
        Plan::Sql(sql) | Plan::Reorder(sql, _) | Plan::Shuffle(sql, _) => *sql,
    };
    let doing = format!("cannot read table {}", def.table);
    let mut stmt = None;
    let spec = query.spec_for(sql);
    let mut rows = ScanRows::open(
        &conn,
        (sql, &query.params),
        spec,
        &mut stmt,
        (&def.table, &doing),
    )?;
    let columns = rows.columns();
    let mut out = Batches::new(link, columns);
    match plan {
        Plan::Sql(_) => {
            while let Some(going) = out.push_next(&mut rows)? {
                if !going {
                    return Ok(()); // the merge stopped
                }
            }
        }
        Plan::Reorder(_, near) => reorder(&mut rows, &near, &mut out, at)?,
        Plan::Shuffle(_, ranks) => {
            let mut shuffle = Shuffle::new(&ranks, columns);
            while let Some(row) = rows.next()? {
                if !shuffle.push(&row)? {
                    return Err(db::table_changed(at(row.rowid())));
                }
            }
            shuffle.drain(|row| out.extend_refs(row))?;
        }
    }
    out.finish();
    Ok(())
}

/// Hands on the rows of a scan close to time order in the order of `near`'s schedule.
fn reorder(
    rows: &mut ScanRows,
    near: &NearlySorted,
    out: &mut Batches,
    at: impl Fn(i64) -> Location,
) -> Result<()> {
    let columns = out.columns;
    let mut held = Held::new(near.depth, columns);
    for &rowid in &near.schedule {
        held.read_past(rows, rowid)?;
        // the rows of `rowid`: none when the query filters it out
        let mut i = held.first_at_or_after(rowid);
        while let Some(row) = held.take_if(i, rowid) {
            if !out.extend_packed(row) {
                return Ok(()); // the merge stopped
            }
            i += 1;
        }
        held.drop_taken();
    }
    if !held.is_empty() || rows.next()?.is_some() {
        return Err(db::table_changed(at(held.last_read())));
    }
    Ok(())
}

/// Runs the launch join of `def` on a connection of its own and sends its rows.
fn read_join(path: &Path, join: &LaunchJoin, orders: &Orders, link: &Link) -> Result<()> {
    let conn = db::open(path)?;
    let mut out = Batches::new(link, crate::join::LAUNCH_COLUMNS);
    // false: the merge stopped
    join.run(&conn, orders, |row| Ok(out.extend(row)))?;
    out.finish();
    Ok(())
}

/// Runs `read` on a reader thread of its own, `name`d, which sends its rows (or the error that
/// stopped it) through a bounded channel; the merge's end of it.
fn spawn_reader<'scope, 'env, 'a>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    name: String,
    read: impl FnOnce(&Link) -> Result<()> + Send + 'scope,
) -> Result<Feed<'a>> {
    let (link, rx, back) = Link::new(AHEAD);
    let reader = move || {
        if let Err(e) = read(&link) {
            link.fail(e);
        }
    };
    std::thread::Builder::new()
        .name(name)
        .spawn_scoped(scope, reader)
        .map_err(Error::Io)?;
    Ok(Feed::Channel(rx, back))
}

/// Where a cursor's rows come from.
enum Feed<'a> {
    /// Batches from a reader thread, and the way back for spent ones.
    Channel(Receiver<Msg>, SyncSender<Batch>),
    Spool(SpoolReader<'a>, usize),
}

struct Cursor<'a> {
    feed: Feed<'a>,
    columns: usize,
    /// The rows at hand, and `pos` the first cell of the next one.
    batch: Batch,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(feed: Feed<'a>) -> Self {
        Cursor {
            feed,
            columns: 0,
            batch: Batch::default(),
            pos: 0,
        }
    }

    /// The next row, or `None` at the end of the stream; waits for a reader or a spool's
    /// producer when nothing is there yet. Progress advances by whole batches: an atomic add
    /// per row was 5% of the merge's thread.
    fn next(&mut self, progress: &Progress) -> Result<Option<Row<'_>>> {
        if self.pos >= self.batch.cells.len() {
            let (columns, batch) = match &mut self.feed {
                Feed::Channel(rx, _) => match rx.recv() {
                    Ok(Msg::Rows { columns, batch }) => (columns, batch),
                    Ok(Msg::Failed(e)) => return Err(e),
                    Err(_) => return Ok(None),
                },
                Feed::Spool(reader, columns) => match reader.next()? {
                    Next::Rows(batch) => (*columns, batch),
                    Next::End => return Ok(None),
                },
            };
            self.columns = columns;
            let spent = std::mem::replace(&mut self.batch, batch);
            if let Feed::Channel(_, back) = &self.feed {
                // a reader that has stopped takes none back: the batch is dropped here then
                let _ = back.try_send(spent);
            }
            self.pos = 0;
            progress.advance((self.batch.cells.len() / columns.max(1)) as u64);
        }
        let cells = &self.batch.cells[self.pos..self.pos + self.columns];
        self.pos += self.columns;
        Ok(Some(Row {
            cells,
            texts: self.batch.texts(),
        }))
    }
}

/// The streams being merged: their definitions, cursors, last rowids, and each one's next
/// event (its key is on the merge's heap).
struct Streams<'a, 'c> {
    defs: &'a [StreamDef],
    cursors: &'a mut [Cursor<'c>],
    last_rowid: Vec<Option<i64>>,
    /// Each stream's next event: the place where the decoders of the frequent rows make their
    /// events ([`Slot`]).
    heads: Vec<Slot>,
}

impl Streams<'_, '_> {
    /// Decodes rows of stream `i` into its head until one gives an event; gives its key, or
    /// `None` at the stream's end.
    fn advance(
        &mut self,
        i: usize,
        dec: &mut Decoder,
        ctx: &mut ImportCtx,
    ) -> Result<Option<OrderKey>> {
        let def = &self.defs[i];
        let slot = &mut self.heads[i];
        let last_rowid = &mut self.last_rowid[i];
        while let Some(row) = self.cursors[i].next(ctx.progress)? {
            let row = &row;
            let rid = rowid(row);
            if def.unique_rowid && *last_rowid == Some(rid) {
                continue;
            }
            *last_rowid = Some(rid);
            match dec.decode(&def.kind, &def.table, row, ctx, slot) {
                Ok(()) => {
                    if let Some((event, _)) = slot {
                        return Ok(Some(OrderKey::of(event, i as u64)));
                    }
                }
                Err(Skip::Fatal(e)) => return Err(e),
                Err(skip) => record_skip(ctx.diag, &def.table, rid, &skip),
            }
        }
        Ok(None)
    }
}

/// Runs every stream to its end, pushing events to `ctx` in the total order. `passes` (the
/// nvtx-kernel pass) run on threads of their own and write the spools some streams read.
pub fn run(
    dec: &mut Decoder,
    path: &Path,
    defs: &[StreamDef],
    passes: &[Pass],
    ctx: &mut ImportCtx,
) -> Result<()> {
    let orders = Orders::default();
    let orders = &orders;
    std::thread::scope(|scope| {
        for pass in passes {
            let producer = move || match db::open(path) {
                Ok(conn) => pass.run(&conn, orders),
                Err(e) => pass.fail(crate::spool::Failure::of(&e)),
            };
            std::thread::Builder::new()
                .name("nsys nvtx-kernel".into())
                .spawn_scoped(scope, producer)
                .map_err(Error::Io)?;
        }
        let mut cursors = Vec::with_capacity(defs.len());
        for def in defs {
            let feed = match &def.source {
                Source::Query(query) => spawn_reader(scope, format!("nsys {}", def.table), {
                    move |link| read(path, def, query, orders, link)
                })?,
                Source::Join(join) => spawn_reader(scope, format!("nsys {} join", def.table), {
                    move |link| read_join(path, join, orders, link)
                })?,
                Source::Spool(spool) => Feed::Spool(spool.reader()?, spool.columns()),
            };
            cursors.push(Cursor::new(feed));
        }
        merge(dec, defs, &mut cursors, ctx)
    })
}

fn merge(
    dec: &mut Decoder,
    defs: &[StreamDef],
    cursors: &mut [Cursor],
    ctx: &mut ImportCtx,
) -> Result<()> {
    let mut streams = Streams {
        defs,
        cursors,
        last_rowid: vec![None; defs.len()],
        heads: (0..defs.len()).map(|_| None).collect(),
    };
    let mut heap: BinaryHeap<Reverse<(OrderKey, usize)>> = BinaryHeap::new();
    for i in 0..defs.len() {
        if let Some(key) = streams.advance(i, dec, ctx)? {
            heap.push(Reverse((key, i)));
        }
    }
    let mut last: Option<(i64, u8, i64)> = None;
    loop {
        let from_stream = heap.peek().map(|Reverse((k, i))| (*k, *i));
        let event = match (from_stream, dec.next_deferred()) {
            (None, None) => break,
            (Some((k, i)), d) if d.is_none_or(|dk| k < dk) => {
                let head = streams.heads[i].take();
                let (event, hook) = head.expect("a queued stream has a head");
                let next = streams.advance(i, dec, ctx)?;
                // the stream's next head takes its place at the top: one sift, not a pop and a
                // push (the heap was 7% of the merge's thread)
                match (next, heap.peek_mut()) {
                    (Some(key), Some(mut top)) => *top = Reverse((key, i)),
                    (None, Some(top)) => drop(std::collections::binary_heap::PeekMut::pop(top)),
                    (_, None) => unreachable!("the stream was on the heap"),
                }
                match dec.on_emit(event, hook, ctx.defs, ctx.diag) {
                    Some(e) => e,
                    None => continue,
                }
            }
            _ => dec.pop_deferred().expect("a deferred event"),
        };
        let k = OrderKey::of(&event, 0);
        let now = (k.ts, k.class, k.neg_dur);
        if last.is_some_and(|l| now < l) {
            return Err(Error::invalid(
                Location::Nowhere,
                format!(
                    "internal: nsys events out of order ({now:?} after {last:?}); please report this file"
                ),
            ));
        }
        last = Some(now);
        ctx.emit(event)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Schema;
    use crate::order::{Order, OrderCheck};
    use crate::plan::{order_by, range_order, Kind};
    use rusqlite::Connection;

    /// Every row the reader of `query` sends, in order.
    fn rows_read(path: &Path, def: &StreamDef, query: &Query) -> Vec<Vec<SqlValue>> {
        let (link, rx, _back) = Link::new(1 << 16);
        read(path, def, query, &Orders::default(), &link).unwrap();
        drop(link);
        let mut out = Vec::new();
        for msg in rx {
            let Msg::Rows { columns, batch } = msg else {
                panic!("the reader failed")
            };
            out.extend(batch.to_rows(columns));
        }
        out
    }

    /// A table close to time order (two threads written one after the other in chunks, ties
    /// at equal starts, open ranges, a text cell, rows the query filters out) is reordered by
    /// tracex into exactly the rows and order of SQLite's ORDER BY; so is a shuffled one, through
    /// the shuffle; one with a text start is left to SQLite.
    #[test]
    fn nearly_sorted_tables_are_reordered_as_sqlite_sorts_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("near.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE T (start INTEGER, end INTEGER, kind INTEGER, name TEXT)")
            .unwrap();
        let mut rows = Vec::new();
        for chunk in 0..50i64 {
            for thread in 0..2i64 {
                for i in 0..7i64 {
                    let start = chunk * 100 + i * 10 + thread * 3 * (i % 2);
                    let end = match (i, thread) {
                        (3, _) => None,
                        _ => Some(start + 5 + (i % 3) * thread),
                    };
                    rows.push((start - (i == 5) as i64 * 3, end, i % 4));
                }
            }
        }
        for (s, e, k) in &rows {
            conn.execute(
                "INSERT INTO T VALUES (?1, ?2, ?3, 'n' || ?1)",
                rusqlite::params![s, e, k],
            )
            .unwrap();
        }
        let schema = Schema::probe(&conn, &Location::Nowhere).unwrap();
        let t = schema.table("T").unwrap();
        let select = "SELECT rowid, start, end, name FROM T WHERE kind != 2".to_string();
        let query = Query::ordered(&t, "start", Some("end"), |sorted| {
            format!("{select}{}", order_by(sorted, &range_order(&t, "")))
        });
        let check = OrderCheck {
            table: t.clone(),
            ts: "start",
            end: Some("end"),
        };
        assert!(matches!(
            *Orders::default().order(&conn, &check),
            Order::Near(_)
        ));
        let def = StreamDef::new(&t, query.clone(), Kind::CudaEvent);
        let want: Vec<Vec<SqlValue>> = conn
            .prepare(&query.sort)
            .unwrap()
            .query_map([], |r| (0..4).map(|i| r.get(i)).collect())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(want.len() > 400);
        assert_eq!(rows_read(&path, &def, &query), want);
        let sorted_by_sqlite = |conn: &Connection| -> Vec<Vec<SqlValue>> {
            conn.prepare(&query.sort)
                .unwrap()
                .query_map([], |r| (0..4).map(|i| r.get(i)).collect())
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        // shuffled: the rows go through the shuffle
        conn.execute_batch(
            "CREATE TABLE S AS SELECT * FROM T ORDER BY (rowid * 7919) % 701; DROP TABLE T;
             ALTER TABLE S RENAME TO T",
        )
        .unwrap();
        assert!(matches!(
            *Orders::default().order(&conn, &check),
            Order::Shuffled(_)
        ));
        let want = sorted_by_sqlite(&conn);
        assert_eq!(want.len(), 500);
        assert_eq!(rows_read(&path, &def, &query), want);
        // a start that is not an integer: SQLite sorts
        conn.execute_batch("UPDATE T SET start = 'x' WHERE rowid = 9")
            .unwrap();
        assert!(matches!(
            *Orders::default().order(&conn, &check),
            Order::Unsorted
        ));
        assert_eq!(rows_read(&path, &def, &query), sorted_by_sqlite(&conn));
    }
}
