//! NVTX (`NVTX_EVENTS`): push/pop ranges (59, NVTXT 70) on thread tracks, start/end ranges (60,
//! 71) on one async track per (process, domain) since they may overlap and end on another
//! thread, marks (34) as instants. Domain (75/76), category (33) and thread-name (39) rows name
//! things and are read up front. Names are `text` or, for registered strings, `StringIds[textId]`
//! (both occur in one file); domain ids restart in every process, so domains are per process.

use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;

use rustc_hash::FxHashMap;
use tracex_ir::{Args, Defs, Diagnostics, Location, Result, StrId, TrackId, Value};

use crate::db::rows_where;
use crate::db::{rowid, sqlite_error, Cols, Row, Schema, Table};
use crate::decoded::{thread_range, Decoded, Hook, Parts, Skip};
use crate::diag::{record_rows, row_at};
use crate::identity::{GlobalId, Identity};
use crate::importer::Importer;
use crate::options::Activity;
use crate::plan::{order_by, range_order, Kind, Query, StreamDef};
use crate::strings::Strings;

pub const PUSH_POP: &str = "59, 70";
pub const START_END: &str = "60, 71";
pub const MARK: &str = "34";
const DEFINITIONS: &str = "33, 39, 75, 76";
const KNOWN: &str = "33, 34, 39, 59, 60, 70, 71, 75, 76";

/// Names of NVTX domains and categories, per process: what decoding NVTX rows needs besides
/// the shared state.
#[derive(Debug, Default)]
pub struct NvtxDefs {
    domains: FxHashMap<(i64, i64), String>,
    categories: FxHashMap<(i64, i64, i64), String>,
    /// Interned async track names per (process, domain).
    track_names: FxHashMap<(i64, i64), StrId>,
}

/// The SQL of an NVTX row's name: its text, else its registered string.
pub fn name_sql(t: &Table, alias: &str) -> String {
    let strings = "StringIds";
    format!(
        "coalesce({a}{}, (SELECT s.value FROM {strings} s WHERE s.id = {a}{}))",
        t.col("text"),
        t.col("textId"),
        a = alias
    )
}

/// ` AND <name> starts with one of the prefixes` (bound as one JSON array parameter), or
/// nothing without `--nvtx-prefix`.
pub fn prefix_filter(
    t: &Table,
    alias: &str,
    prefixes: &[String],
    params: &mut Vec<SqlValue>,
) -> String {
    if prefixes.is_empty() {
        return String::new();
    }
    params.push(SqlValue::Text(
        serde_json::to_string(prefixes).unwrap_or_else(|_| "[]".into()),
    ));
    format!(
        " AND EXISTS (SELECT 1 FROM json_each(?{n}) p WHERE substr({name}, 1, length(p.value)) = p.value)",
        n = params.len(),
        name = name_sql(t, alias)
    )
}

/// Reads domain, category and thread-name rows; counts them.
pub fn load_defs(
    conn: &Connection,
    schema: &Schema,
    ids: &mut Identity,
    strings: &Strings,
    diag: &mut Diagnostics,
) -> Result<NvtxDefs> {
    let mut nv = NvtxDefs::default();
    let Some(t) = schema.table("NVTX_EVENTS") else {
        return Ok(nv);
    };
    if !t.has("eventType") {
        return Ok(nv);
    }
    let at = Location::Row {
        table: t.name.clone(),
        rowid: 0,
    };
    let err = |e| sqlite_error(at.clone(), "cannot read NVTX definitions", e);
    let sql = format!(
        "SELECT {}, {}, {}, {}, {}, {} FROM {} WHERE {} IN ({DEFINITIONS})",
        t.col("eventType"),
        t.col("globalTid"),
        t.col("domainId"),
        t.col("category"),
        t.col("text"),
        t.col("textId"),
        t.sql_name(),
        t.col("eventType")
    );
    let mut stmt = conn.prepare(&sql).map_err(err)?;
    let mut rows = stmt.query([]).map_err(err)?;
    while let Some(r) = rows.next().map_err(err)? {
        let int = |i| r.get::<_, Option<i64>>(i).ok().flatten();
        let (ty, gtid, domain, cat) = (int(0), int(1), int(2), int(3));
        let text: Option<String> = r
            .get::<_, Option<String>>(4)
            .ok()
            .flatten()
            .or_else(|| int(5).and_then(|id| strings.get(id)).map(str::to_string));
        let (Some(ty), Some(gtid), Some(text)) = (ty, gtid, text) else {
            continue;
        };
        let p = GlobalId(gtid).process_key();
        match ty {
            75 => {
                nv.domains.insert((p, domain.unwrap_or(0)), text);
            }
            33 => {
                if let Some(c) = cat {
                    nv.categories.insert((p, domain.unwrap_or(0), c), text);
                }
            }
            39 => ids.add_nvtx_thread_name(gtid, text),
            _ => {}
        }
    }
    let ty = t.col("eventType");
    let defined = rows_where(conn, &t, &format!("{ty} IN ({DEFINITIONS})"))?;
    record_rows(
        diag,
        &crate::diag::NVTX_DEFINITION_ROW,
        &t.name,
        defined,
        None,
    );
    let unknown = rows_where(conn, &t, &format!("{ty} IS NULL OR {ty} NOT IN ({KNOWN})"))?;
    record_rows(
        diag,
        &crate::diag::NVTX_UNKNOWN_TYPE,
        &t.name,
        unknown,
        None,
    );
    Ok(nv)
}

/// The columns of an NVTX event row, in this order.
const COLS: &[&str] = &[
    "start",
    "end",
    "globalTid",
    "endGlobalTid",
    "text",
    "textId",
    "domainId",
    "category",
    "color",
    "rangeId",
    "uint64Value",
    "int64Value",
    "doubleValue",
    "uint32Value",
    "int32Value",
    "floatValue",
    "jsonText",
    "jsonTextId",
    "binaryData",
];

pub fn plans(schema: &Schema, imp: &Importer, out: &mut Vec<StreamDef>) {
    let acts = imp.activities();
    let want_ranges = acts.contains(Activity::Nvtx);
    // nvtx-kernel needs the push/pop ranges to name the kernels launched inside them.
    let want_push_pop = want_ranges || acts.contains(Activity::NvtxKernel);
    if !want_push_pop {
        return;
    }
    let Some(t) = schema.table("NVTX_EVENTS") else {
        return;
    };
    if !t.has("eventType") || !t.has("start") {
        return;
    }
    let mut add = |types: &str, kind: Kind| {
        let mut params = Vec::new();
        let filter = prefix_filter(&t, "n.", imp.nvtx_prefixes(), &mut params);
        let cols = COLS
            .iter()
            .map(|c| match t.has(c) {
                true => format!("n.{}", t.col(c)),
                false => "NULL".into(),
            })
            .collect::<Vec<_>>()
            .join(", ");
        let select = format!(
            "SELECT n.rowid, {cols} FROM {} n WHERE n.{} IN ({types}){filter}",
            t.sql_name(),
            t.col("eventType"),
        );
        let mut query = Query::ordered(&t, "start", Some("end"), |sorted| {
            format!("{select}{}", order_by(sorted, &range_order(&t, "n.")))
        });
        query.params = params;
        out.push(StreamDef::new(&t, query, kind));
    };
    add(PUSH_POP, Kind::NvtxPushPop { emit: want_ranges });
    if want_ranges {
        add(START_END, Kind::NvtxStartEnd);
        add(MARK, Kind::NvtxMark);
    }
}

/// What an NVTX event row holds besides its time.
struct NvtxRow {
    start: i64,
    end: Option<i64>,
    gtid: i64,
    domain: i64,
    name: StrId,
    color: Option<StrId>,
    args: Args,
}

/// The one payload union member that is set.
fn payload(imp: &Importer, c: &mut Cols) -> Option<Value> {
    let vals: Vec<Option<Value>> = (0..9).map(|_| c.raw()).collect();
    let mut it = vals.into_iter();
    let (u64v, i64v, dv, u32v, i32v, fv, json, json_id, blob) = (
        it.next()?,
        it.next()?,
        it.next()?,
        it.next()?,
        it.next()?,
        it.next()?,
        it.next()?,
        it.next()?,
        it.next()?,
    );
    if let Some(Value::Int(v)) = u64v {
        return Some(Value::UInt(v as u64));
    }
    if let Some(v) = i64v.or(dv).or(u32v).or(i32v).or(fv).or(json) {
        return Some(v);
    }
    if let Some(Value::Int(id)) = json_id {
        return Some(match imp.text(id) {
            Some(s) => Value::str(s),
            None => Value::Int(id),
        });
    }
    blob
}

/// How a range row is read: on an async track (start/end) or its thread (push/pop), and
/// whether it is emitted.
#[derive(Clone, Copy)]
pub struct RangeKind {
    pub async_range: bool,
    pub emit: bool,
}

impl NvtxDefs {
    /// Reads an NVTX event row: name, domain, category, colour, payload.
    fn row(
        &self,
        imp: &mut Importer,
        table: &str,
        row: &Row,
        (defs, diag): (&mut Defs, &mut Diagnostics),
    ) -> Result<NvtxRow, Skip> {
        let rid = rowid(row);
        let at = row_at(table, rid);
        let mut c = Cols::new(row);
        let (start, end, gtid) = thread_range(&mut c)?;
        let end_gtid = c.opt_int("endGlobalTid")?;
        let text = c.opt_text();
        let text_id = c.opt_int("textId")?;
        let domain = c.opt_int("domainId")?.unwrap_or(0);
        let category = c.opt_int("category")?;
        let color = c.opt_int("color")?;
        let range_id = c.opt_int("rangeId")?;
        let name = match (text, text_id) {
            (Some(t), _) => defs.intern(&t),
            (None, Some(id)) => imp.name(defs, diag, id, at),
            (None, None) => defs.intern("[unnamed NVTX range]"),
        };
        let p = GlobalId(gtid).process_key();
        let mut args = Args::new();
        if domain != 0 {
            let v = match self.domains.get(&(p, domain)) {
                Some(n) => Value::str(n.as_str()),
                None => Value::Int(domain),
            };
            imp.arg(defs, &mut args, "domain", || v);
        }
        if let Some(cat) = category {
            let v = match self.categories.get(&(p, domain, cat)) {
                Some(n) => Value::str(n.as_str()),
                None => Value::Int(cat),
            };
            imp.arg(defs, &mut args, "category", || v);
        }
        if let Some(argb) = color {
            let v = Value::str(format!("#{:06x}", argb & 0xFF_FFFF));
            imp.arg(defs, &mut args, "color", || v);
        }
        if let Some(r) = range_id {
            imp.arg(defs, &mut args, "range_id", || Value::Int(r));
        }
        if let Some(e) = end_gtid.filter(|e| *e != gtid) {
            imp.arg(defs, &mut args, "end_tid", || Value::Int(GlobalId(e).tid()));
        }
        if let Some(v) = payload(imp, &mut c) {
            imp.arg(defs, &mut args, "payload", || v);
        }
        let color = imp.color_of(defs, name);
        Ok(NvtxRow {
            start,
            end,
            gtid,
            domain,
            name,
            color,
            args,
        })
    }

    /// A push/pop or start/end range.
    pub fn decode_range(
        &mut self,
        imp: &mut Importer,
        how: RangeKind,
        table: &str,
        row: &Row,
        (defs, diag): (&mut Defs, &mut Diagnostics),
    ) -> Decoded {
        let rid = rowid(row);
        let at = row_at(table, rid);
        let mut r = self.row(imp, table, row, (defs, diag))?;
        let track = if how.async_range {
            self.async_range_track(imp, defs, GlobalId(r.gtid), r.domain)
        } else {
            imp.thread(defs, r.gtid)
        };
        let dur = if how.emit {
            imp.duration(defs, diag, (r.start, r.end), &mut r.args, at)
        } else {
            r.end.map(|e| (e - r.start).max(0))
        };
        let parts = Parts {
            track,
            ts: r.start,
            name: r.name,
            cat: imp.keys().cat_nvtx,
            args: r.args,
        };
        let hook = if how.async_range {
            Hook::None
        } else {
            Hook::NvtxPush {
                end: r.end.unwrap_or(i64::MAX),
                name: r.name,
                emit: how.emit,
            }
        };
        Ok(Some((parts.slice(dur, None, r.color), hook)))
    }

    /// The async track of NVTX domain `domain` in the process of `g`: "NVTX <domain name>".
    fn async_range_track(
        &mut self,
        imp: &mut Importer,
        defs: &mut Defs,
        g: GlobalId,
        domain: i64,
    ) -> TrackId {
        let p = imp.process(defs, g);
        let key = (g.process_key(), domain);
        let name = match self.track_names.get(&key) {
            Some(n) => *n,
            None => {
                let n = match (domain, self.domains.get(&key)) {
                    (0, _) => defs.intern("NVTX"),
                    (_, Some(d)) => defs.intern(&format!("NVTX {d}")),
                    (d, None) => defs.intern(&format!("NVTX domain {d}")),
                };
                self.track_names.insert(key, n);
                n
            }
        };
        imp.async_track(defs, p, name)
    }

    /// A mark (an instant on its thread).
    pub fn decode_mark(
        &self,
        imp: &mut Importer,
        table: &str,
        row: &Row,
        (defs, diag): (&mut Defs, &mut Diagnostics),
    ) -> Decoded {
        let r = self.row(imp, table, row, (defs, diag))?;
        let track = imp.thread(defs, r.gtid);
        Ok(Some((
            Parts {
                track,
                ts: r.start,
                name: r.name,
                cat: imp.keys().cat_nvtx,
                args: r.args,
            }
            .instant(r.color),
            Hook::None,
        )))
    }
}
