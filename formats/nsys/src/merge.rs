//! The k-way merge: every stream's next event waits in a heap keyed by the IR's total order
//! (time; slices, longer first; instants; flow points; counters; samples), and the smallest goes
//! out. Memory: one decoded row per stream plus the few events made at emission time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rusqlite::Connection;
use tracex_ir::order::OrderKey;
use tracex_ir::{Error, Event, ImportCtx, Location, Result};

use crate::db::{rowid, sqlite_error};
use crate::importer::{Hook, Importer, Skip};
use crate::plan::StreamDef;

struct Head {
    key: OrderKey,
    event: Event,
    hook: Hook,
}

/// Decodes rows of stream `i` until one gives an event.
fn next_head(
    imp: &mut Importer,
    def: &StreamDef,
    rows: &mut rusqlite::Rows,
    last_rowid: &mut Option<i64>,
    i: usize,
    ctx: &mut ImportCtx,
) -> Result<Option<Head>> {
    loop {
        let row = match rows.next() {
            Ok(Some(r)) => r,
            Ok(None) => return Ok(None),
            Err(e) => {
                return Err(sqlite_error(
                    Location::Row {
                        table: def.table.clone(),
                        rowid: last_rowid.unwrap_or(0),
                    },
                    &format!("cannot read table {}", def.table),
                    e,
                ))
            }
        };
        ctx.progress.advance(1);
        let rid = rowid(row);
        if def.unique_rowid && *last_rowid == Some(rid) {
            continue;
        }
        *last_rowid = Some(rid);
        match imp.decode(&def.kind, &def.table, row, ctx) {
            Ok(Some((event, hook))) => {
                let key = OrderKey::of(&event, i as u64);
                return Ok(Some(Head { key, event, hook }));
            }
            Ok(None) => {}
            Err(Skip::Fatal(e)) => return Err(e),
            Err(skip) => Importer::record_skip(ctx.defs, &def.table, rid, &skip),
        }
    }
}

/// Runs every stream to its end, pushing events to `ctx` in the total order.
pub fn run(
    imp: &mut Importer,
    conn: &Connection,
    defs: &[StreamDef],
    ctx: &mut ImportCtx,
) -> Result<()> {
    let mut stmts = Vec::with_capacity(defs.len());
    for d in defs {
        let stmt = conn.prepare(&d.sql).map_err(|e| {
            sqlite_error(
                Location::Row {
                    table: d.table.clone(),
                    rowid: 0,
                },
                &format!("cannot query table {}", d.table),
                e,
            )
        })?;
        stmts.push(stmt);
    }
    let mut rows = Vec::with_capacity(defs.len());
    for (stmt, d) in stmts.iter_mut().zip(defs) {
        let r = stmt
            .query(rusqlite::params_from_iter(d.params.iter()))
            .map_err(|e| {
                sqlite_error(
                    Location::Row {
                        table: d.table.clone(),
                        rowid: 0,
                    },
                    &format!("cannot query table {}", d.table),
                    e,
                )
            })?;
        rows.push(r);
    }
    let mut last_rowid: Vec<Option<i64>> = vec![None; defs.len()];
    let mut heads: Vec<Option<Head>> = Vec::with_capacity(defs.len());
    let mut heap: BinaryHeap<Reverse<(OrderKey, usize)>> = BinaryHeap::new();
    for i in 0..defs.len() {
        let h = next_head(imp, &defs[i], &mut rows[i], &mut last_rowid[i], i, ctx)?;
        if let Some(h) = &h {
            heap.push(Reverse((h.key, i)));
        }
        heads.push(h);
    }
    let mut last: Option<(i64, u8, i64)> = None;
    loop {
        let from_stream = heap.peek().map(|Reverse((k, i))| (*k, *i));
        let event = match (from_stream, imp.next_deferred()) {
            (None, None) => break,
            (Some((k, i)), d) if d.is_none_or(|dk| k < dk) => {
                heap.pop();
                let head = heads[i].take().expect("a queued stream has a head");
                let next = next_head(imp, &defs[i], &mut rows[i], &mut last_rowid[i], i, ctx)?;
                if let Some(h) = &next {
                    heap.push(Reverse((h.key, i)));
                }
                heads[i] = next;
                match imp.on_emit(head.event, head.hook, ctx.defs) {
                    Some(e) => e,
                    None => continue,
                }
            }
            _ => imp.pop_deferred().expect("a deferred event"),
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
