//! The k-way merge. Every stream is read on its own thread (own read-only connection), which
//! steps SQLite and hands rows over in small batches through a bounded channel; the calling
//! thread decodes them and keeps each stream's next event in a heap keyed by the IR's total
//! order (time; slices, longer first; instants; flow points; counters; samples), emitting the
//! smallest. Memory: a few batches per stream plus the events made at emission time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use rusqlite::types::{Value as SqlValue, ValueRef};
use tracex_ir::order::OrderKey;
use tracex_ir::{Error, Event, ImportCtx, Location, Result};

use crate::db::{self, rowid, sqlite_error, Row};
use crate::decoded::{Hook, Skip};
use crate::diag::record_skip;
use crate::dispatch::Decoder;
use crate::join::LaunchJoin;
use crate::plan::{Orders, Query, Source, StreamDef};
use crate::projection::Pass;
use crate::spool::{Next, SpoolReader};

/// Rows per batch sent from a reader.
const BATCH_ROWS: usize = 256;
/// Batches a reader may run ahead of the merge.
const AHEAD: usize = 4;

/// What a reader sends: rows (flat, `columns` values each), or the error that stopped it.
enum Msg {
    Rows {
        columns: usize,
        values: Vec<SqlValue>,
    },
    Failed(Error),
}

/// Runs `def`'s query on a connection of its own and sends the rows.
fn read(
    path: &Path,
    def: &StreamDef,
    query: &Query,
    orders: &Orders,
    tx: &SyncSender<Msg>,
) -> Result<()> {
    let at = || Location::Row {
        table: def.table.clone(),
        rowid: 0,
    };
    let conn = db::open(path)?;
    let sql = query.sql(&conn, orders);
    let doing = format!("cannot query table {}", def.table);
    let mut stmt = conn
        .prepare(sql)
        .map_err(|e| sqlite_error(at(), &doing, e))?;
    let columns = stmt.column_count();
    let mut rows = stmt
        .query(rusqlite::params_from_iter(query.params.iter()))
        .map_err(|e| sqlite_error(at(), &doing, e))?;
    let mut values = Vec::with_capacity(BATCH_ROWS * columns);
    let mut last = 0;
    let doing = format!("cannot read table {}", def.table);
    loop {
        let row = rows.next().map_err(|e| {
            sqlite_error(
                Location::Row {
                    table: def.table.clone(),
                    rowid: last,
                },
                &doing,
                e,
            )
        })?;
        let Some(row) = row else { break };
        for i in 0..columns {
            // integers and NULLs (most cells) without FromSql's checks or an allocation
            values.push(match row.get_ref_unwrap(i) {
                ValueRef::Integer(v) => SqlValue::Integer(v),
                ValueRef::Null => SqlValue::Null,
                other => SqlValue::from(other),
            });
        }
        if let Some(SqlValue::Integer(r)) = values.get(values.len() - columns) {
            last = *r;
        }
        if values.len() >= BATCH_ROWS * columns {
            let full = std::mem::replace(&mut values, Vec::with_capacity(BATCH_ROWS * columns));
            if tx
                .send(Msg::Rows {
                    columns,
                    values: full,
                })
                .is_err()
            {
                return Ok(()); // the merge stopped
            }
        }
    }
    if !values.is_empty() {
        let _ = tx.send(Msg::Rows { columns, values });
    }
    Ok(())
}

/// Runs the launch join of `def` on a connection of its own and sends its rows.
fn read_join(path: &Path, join: &LaunchJoin, orders: &Orders, tx: &SyncSender<Msg>) -> Result<()> {
    let conn = db::open(path)?;
    let columns = crate::flows::LAUNCH_COLUMNS;
    let mut values = Vec::with_capacity(BATCH_ROWS * columns);
    join.run(&conn, orders, |row| {
        values.extend_from_slice(row);
        if values.len() >= BATCH_ROWS * columns {
            let full = std::mem::replace(&mut values, Vec::with_capacity(BATCH_ROWS * columns));
            // false: the merge stopped
            return Ok(tx
                .send(Msg::Rows {
                    columns,
                    values: full,
                })
                .is_ok());
        }
        Ok(true)
    })?;
    if !values.is_empty() {
        let _ = tx.send(Msg::Rows { columns, values });
    }
    Ok(())
}

/// The merge's end of one reader.
/// Where a cursor's rows come from.
enum Feed<'a> {
    Channel(Receiver<Msg>),
    Spool(SpoolReader<'a>, usize),
}

struct Cursor<'a> {
    feed: Feed<'a>,
    columns: usize,
    values: Vec<SqlValue>,
    pos: usize,
}

/// What a cursor yields.
enum Got<'a> {
    Row(&'a Row),
    Watermark(i64),
}

impl Cursor<'_> {
    /// The next row or watermark, or `None` at the end of the stream.
    fn next(&mut self) -> Result<Option<Got<'_>>> {
        if self.pos >= self.values.len() {
            let (columns, values) = match &mut self.feed {
                Feed::Channel(rx) => match rx.recv() {
                    Ok(Msg::Rows { columns, values }) => (columns, values),
                    Ok(Msg::Failed(e)) => return Err(e),
                    Err(_) => return Ok(None),
                },
                Feed::Spool(reader, columns) => match reader.next()? {
                    Next::Rows(values) => (*columns, values),
                    Next::Watermark(ts) => return Ok(Some(Got::Watermark(ts))),
                    Next::End => return Ok(None),
                },
            };
            self.columns = columns;
            self.values = values;
            self.pos = 0;
        }
        let row = &self.values[self.pos..self.pos + self.columns];
        self.pos += self.columns;
        Ok(Some(Got::Row(row)))
    }
}

/// A stream's next item in the merge: an event, or a watermark that holds the stream's place
/// (nothing it sends later is earlier) until it sends more.
enum Item {
    Event(Event, Hook),
    Watermark,
}

struct Head {
    key: OrderKey,
    item: Item,
}

/// Decodes rows of stream `i` until one gives an event.
fn next_head(
    dec: &mut Decoder,
    def: &StreamDef,
    cursor: &mut Cursor,
    last_rowid: &mut Option<i64>,
    i: usize,
    ctx: &mut ImportCtx,
) -> Result<Option<Head>> {
    while let Some(got) = cursor.next()? {
        let row = match got {
            Got::Row(row) => row,
            Got::Watermark(ts) => {
                // before every event at `ts`: slices first, and the longest possible
                let key = OrderKey {
                    ts,
                    class: 0,
                    neg_dur: i64::MIN,
                    seq: i as u64,
                };
                return Ok(Some(Head {
                    key,
                    item: Item::Watermark,
                }));
            }
        };
        ctx.progress.advance(1);
        let rid = rowid(row);
        if def.unique_rowid && *last_rowid == Some(rid) {
            continue;
        }
        *last_rowid = Some(rid);
        match dec.decode(&def.kind, &def.table, row, ctx) {
            Ok(Some((event, hook))) => {
                let key = OrderKey::of(&event, i as u64);
                return Ok(Some(Head {
                    key,
                    item: Item::Event(event, hook),
                }));
            }
            Ok(None) => {}
            Err(Skip::Fatal(e)) => return Err(e),
            Err(skip) => record_skip(ctx.diag, &def.table, rid, &skip),
        }
    }
    Ok(None)
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
                Err(e) => pass.fail(&e.to_string()),
            };
            std::thread::Builder::new()
                .name("nsys nvtx-kernel".into())
                .spawn_scoped(scope, producer)
                .map_err(Error::Io)?;
        }
        let mut cursors = Vec::with_capacity(defs.len());
        for def in defs {
            let feed = match &def.source {
                Source::Query(query) => {
                    let (tx, rx) = sync_channel(AHEAD);
                    let reader = move || {
                        if let Err(e) = read(path, def, query, orders, &tx) {
                            let _ = tx.send(Msg::Failed(e));
                        }
                    };
                    std::thread::Builder::new()
                        .name(format!("nsys {}", def.table))
                        .spawn_scoped(scope, reader)
                        .map_err(Error::Io)?;
                    Feed::Channel(rx)
                }
                Source::Join(join) => {
                    let (tx, rx) = sync_channel(AHEAD);
                    let reader = move || {
                        if let Err(e) = read_join(path, join, orders, &tx) {
                            let _ = tx.send(Msg::Failed(e));
                        }
                    };
                    std::thread::Builder::new()
                        .name(format!("nsys {} join", def.table))
                        .spawn_scoped(scope, reader)
                        .map_err(Error::Io)?;
                    Feed::Channel(rx)
                }
                Source::Spool(spool) => Feed::Spool(spool.reader()?, spool.columns()),
            };
            cursors.push(Cursor {
                feed,
                columns: 0,
                values: Vec::new(),
                pos: 0,
            });
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
    let mut last_rowid: Vec<Option<i64>> = vec![None; defs.len()];
    let mut heads: Vec<Option<Head>> = Vec::with_capacity(defs.len());
    let mut heap: BinaryHeap<Reverse<(OrderKey, usize)>> = BinaryHeap::new();
    for i in 0..defs.len() {
        let h = next_head(dec, &defs[i], &mut cursors[i], &mut last_rowid[i], i, ctx)?;
        if let Some(h) = &h {
            heap.push(Reverse((h.key, i)));
        }
        heads.push(h);
    }
    let mut last: Option<(i64, u8, i64)> = None;
    loop {
        let from_stream = heap.peek().map(|Reverse((k, i))| (*k, *i));
        let event = match (from_stream, dec.next_deferred()) {
            (None, None) => break,
            (Some((k, i)), d) if d.is_none_or(|dk| k < dk) => {
                heap.pop();
                let head = heads[i].take().expect("a queued stream has a head");
                let next = next_head(dec, &defs[i], &mut cursors[i], &mut last_rowid[i], i, ctx)?;
                if let Some(h) = &next {
                    heap.push(Reverse((h.key, i)));
                }
                heads[i] = next;
                let Item::Event(event, hook) = head.item else {
                    continue; // a watermark: the stream has been asked for more
                };
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
