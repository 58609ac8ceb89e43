//! Backtraces: `CUDA_CALLCHAINS`, `OSRT_CALLCHAINS` (stacks of API calls) and
//! `SAMPLING_CALLCHAINS` (stacks of CPU samples), keyed by (id, stackDepth) with depth 0 the
//! leaf. Each is read with a point query on its primary key when a row refers to it, so no
//! callchain is held in memory; the IR's stack table shares common prefixes.
//!
//! nsys 2022.2 numbers CUDA backtraces from 0 in `callchainId` but from 1 in `CUDA_CALLCHAINS.id`
//! (every call's name is in chain `callchainId + 1`, and in about half of chain `callchainId`);
//! elsewhere 0 means "no backtrace" and ids match. [`offset`] tells the two apart.

use rusqlite::{Connection, Statement};
use tracex_ir::{Defs, Location, Result, StackId};

use crate::db::{sqlite_error, Schema};
use crate::strings::Strings;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chain {
    Cuda = 0,
    Osrt = 1,
    Sampling = 2,
}

impl Chain {
    /// The table of events that refers to this chain, and its column.
    fn referrer(self) -> (&'static str, &'static str) {
        match self {
            Chain::Cuda => ("CUPTI_ACTIVITY_KIND_RUNTIME", "callchainId"),
            Chain::Osrt => ("OSRT_API", "callchainId"),
            Chain::Sampling => ("COMPOSITE_EVENTS", "id"),
        }
    }

    fn table(self) -> &'static str {
        match self {
            Chain::Cuda => "CUDA_CALLCHAINS",
            Chain::Osrt => "OSRT_CALLCHAINS",
            Chain::Sampling => "SAMPLING_CALLCHAINS",
        }
    }
}

pub struct Callchains<'c> {
    stmts: [Option<(String, Statement<'c>)>; 3],
    offsets: [i64; 3],
}

/// 1 when the referring ids count from 0 and the chain ids from 1 (see the module doc), else 0.
fn offset(conn: &Connection, schema: &Schema, c: Chain) -> i64 {
    let (Some(chains), Some(events)) = (schema.table(c.table()), schema.table(c.referrer().0))
    else {
        return 0;
    };
    let col = events.col(c.referrer().1);
    let refs = conn.query_row(
        &format!("SELECT min({col}), max({col}) FROM {}", events.sql_name()),
        [],
        |r| Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<i64>>(1)?)),
    );
    let id = chains.col("id");
    let ids = conn.query_row(
        &format!(
            "SELECT max({id}), EXISTS(SELECT 1 FROM {t} WHERE {id} = 0) FROM {t}",
            t = chains.sql_name()
        ),
        [],
        |r| Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, bool>(1)?)),
    );
    match (refs, ids) {
        (Ok((Some(0), Some(max_ref))), Ok((Some(max_id), false))) if max_ref + 1 == max_id => 1,
        _ => 0,
    }
}

impl<'c> Callchains<'c> {
    pub fn new(conn: &'c Connection, schema: &Schema) -> Callchains<'c> {
        let prepare = |c: Chain| {
            let t = schema.table(c.table())?;
            if !(t.has("id") && t.has("symbol") && t.has("stackDepth")) {
                return None;
            }
            let sql = format!(
                "SELECT {}, {} FROM {} WHERE {} = ?1 ORDER BY {} DESC",
                t.col("symbol"),
                t.col("module"),
                t.sql_name(),
                t.col("id"),
                t.col("stackDepth")
            );
            conn.prepare(&sql).ok().map(|s| (t.name.clone(), s))
        };
        Callchains {
            stmts: [
                prepare(Chain::Cuda),
                prepare(Chain::Osrt),
                prepare(Chain::Sampling),
            ],
            offsets: [
                offset(conn, schema, Chain::Cuda),
                offset(conn, schema, Chain::Osrt),
                offset(conn, schema, Chain::Sampling),
            ],
        }
    }

    pub fn has(&self, c: Chain) -> bool {
        self.stmts[c as usize].is_some()
    }

    /// The stack of callchain `id` (root first), or `None` when the table has no such chain.
    pub fn stack(
        &mut self,
        c: Chain,
        id: i64,
        strings: &mut Strings,
        defs: &mut Defs,
    ) -> Result<Option<StackId>> {
        let Some((table, stmt)) = &mut self.stmts[c as usize] else {
            return Ok(None);
        };
        let at = || Location::Row {
            table: table.clone(),
            rowid: 0,
        };
        let mut rows = stmt
            .query([id + self.offsets[c as usize]])
            .map_err(|e| sqlite_error(at(), &format!("cannot read callchain {id}"), e))?;
        let mut cur: Option<StackId> = None;
        while let Some(row) = rows
            .next()
            .map_err(|e| sqlite_error(at(), &format!("cannot read callchain {id}"), e))?
        {
            let name = frame_text(row.get_ref(0).ok(), strings, defs);
            let module = match row.get_ref(1).ok() {
                Some(rusqlite::types::ValueRef::Null) | None => None,
                v => Some(frame_text(v, strings, defs)),
            };
            let f = defs.stacks.intern_frame(name, module);
            cur = Some(defs.stacks.intern(cur, f));
        }
        Ok(cur)
    }
}

/// A frame's symbol or module: a string id, or text in files that store it inline.
fn frame_text(
    v: Option<rusqlite::types::ValueRef>,
    strings: &mut Strings,
    defs: &mut Defs,
) -> tracex_ir::StrId {
    use rusqlite::types::ValueRef;
    match v {
        Some(ValueRef::Integer(id)) => match strings.intern(defs, id) {
            Some(s) => s,
            None => defs.intern(&format!("[string {id}]")),
        },
        Some(ValueRef::Text(t)) => defs.intern(&String::from_utf8_lossy(t)),
        _ => defs.intern("?"),
    }
}
