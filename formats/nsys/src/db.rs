//! The database: opened read-only without touching the file, its schema probed by name, and
//! typed access to row values that reports where a bad value sits.

use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use rustc_hash::FxHashMap;
use tracex_ir::{push_arg, Args, Error, Location, Result, StrId};

use crate::batch::{Packed, Texts};

/// Turns off SQLite's allocation statistics, which take a process-wide mutex on every
/// allocation: the reader threads would contend for it on every row.
fn configure_sqlite() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: sqlite3_config may be called before SQLite is initialized, which is the case
        // before the first connection; after that it returns SQLITE_MISUSE and changes nothing.
        unsafe {
            rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0);
        }
    });
}

/// Opens `path` read-only and `immutable`: SQLite takes no locks and creates no journal or WAL
/// files beside the input. Temporary tables and sorts go to the system temp directory.
pub fn open(path: &Path) -> Result<Connection> {
    configure_sqlite();
    let uri = format!("file:{}?mode=ro&immutable=1", uri_escape(path));
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&uri, flags)
        .map_err(|e| sqlite_error(path_location(path), "cannot open the database", e))?;
    Ok(conn)
}

/// Percent-encodes a path for an SQLite URI (`?`, `#`, `%` and the like would end or change it).
fn uri_escape(path: &Path) -> String {
    let raw = path.to_string_lossy();
    let mut out = String::with_capacity(raw.len());
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn path_location(path: &Path) -> Location {
    Location::File(path.display().to_string())
}

/// The error of a table that changed while tracex read it (its rows no longer match what an
/// earlier scan of it found).
pub fn table_changed(at: Location) -> Error {
    Error::invalid(
        at,
        "internal: the table changed while tracex read it; please report this file",
    )
}

/// An SQLite failure as a tracex error, worded for the usual causes.
pub fn sqlite_error(at: Location, doing: &str, e: rusqlite::Error) -> Error {
    let code = e.sqlite_error_code();
    let why = match code {
        Some(rusqlite::ErrorCode::NotADatabase) => {
            "this is not an SQLite database (or it is encrypted)".to_string()
        }
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => format!(
            "the database is damaged or truncated ({e}); nsys exports can be checked with `sqlite3 FILE 'PRAGMA integrity_check'`"
        ),
        _ => e.to_string(),
    };
    Error::invalid(at, format!("{doing}: {why}"))
}

/// Tables of the file and their columns, as the file itself declares them.
#[derive(Debug, Default)]
pub struct Schema {
    /// Upper-cased table name → (actual name, column names in declaration order).
    tables: FxHashMap<String, (String, Vec<String>)>,
}

impl Schema {
    /// Reads `sqlite_master` and `pragma_table_info` of every table.
    pub fn probe(conn: &Connection, at: &Location) -> Result<Schema> {
        let err = |e| sqlite_error(at.clone(), "cannot read the schema", e);
        let mut stmt = conn
            .prepare(
                "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p \
                 WHERE m.type = 'table' ORDER BY m.name, p.cid",
            )
            .map_err(err)?;
        let mut rows = stmt.query([]).map_err(err)?;
        let mut tables: FxHashMap<String, (String, Vec<String>)> = FxHashMap::default();
        while let Some(row) = rows.next().map_err(err)? {
            let table: String = row.get(0).map_err(err)?;
            let col: String = row.get(1).map_err(err)?;
            tables
                .entry(table.to_ascii_uppercase())
                .or_insert_with(|| (table.clone(), Vec::new()))
                .1
                .push(col);
        }
        Ok(Schema { tables })
    }

    /// The actual name of the table called `name`: the exact name, else the highest `_V<n>`
    /// variant (`NVTX_EVENTS_V2`), as some newer exports name tables.
    pub fn resolve(&self, name: &str) -> Option<&str> {
        let upper = name.to_ascii_uppercase();
        if let Some((actual, _)) = self.tables.get(&upper) {
            return Some(actual);
        }
        let prefix = format!("{upper}_V");
        self.tables
            .iter()
            .filter_map(|(k, (actual, _))| {
                let v: u32 = k.strip_prefix(&prefix)?.parse().ok()?;
                Some((v, actual.as_str()))
            })
            .max()
            .map(|(_, a)| a)
    }

    /// The table `name` (resolved as in [`Schema::resolve`]) with its columns.
    pub fn table(&self, name: &str) -> Option<Table> {
        let actual = self.resolve(name)?;
        let (_, cols) = &self.tables[&actual.to_ascii_uppercase()];
        Some(Table {
            name: actual.to_string(),
            columns: cols.clone(),
        })
    }

    pub fn has_table(&self, name: &str) -> bool {
        self.resolve(name).is_some()
    }

    /// Every table name in the file.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tables.values().map(|(n, _)| n.as_str())
    }
}

/// One table of the file and its columns.
#[derive(Clone, Debug)]
pub struct Table {
    pub name: String,
    pub columns: Vec<String>,
}

impl Table {
    pub fn has(&self, col: &str) -> bool {
        self.columns.iter().any(|c| c.eq_ignore_ascii_case(col))
    }

    /// `col` quoted for SQL when the table has it, else `NULL`: one SELECT list for every
    /// version of a table.
    pub fn col(&self, col: &str) -> String {
        match self.columns.iter().find(|c| c.eq_ignore_ascii_case(col)) {
            Some(c) => quote_ident(c),
            None => "NULL".to_string(),
        }
    }

    /// The first of `cols` the table has (columns renamed across versions), else `NULL`.
    pub fn col_any(&self, cols: &[&str]) -> String {
        cols.iter()
            .find(|c| self.has(c))
            .map(|c| self.col(c))
            .unwrap_or_else(|| "NULL".to_string())
    }

    /// A comma-separated SELECT list of `cols` (missing ones as `NULL`).
    pub fn select_list(&self, cols: &[&str]) -> String {
        cols.iter()
            .map(|c| self.col(c))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The table name quoted for SQL.
    pub fn sql_name(&self) -> String {
        quote_ident(&self.name)
    }

    /// Which of `cols` are missing.
    pub fn missing<'a>(&self, cols: &[&'a str]) -> Vec<&'a str> {
        cols.iter().copied().filter(|c| !self.has(c)).collect()
    }
}

/// The rows of `sql` as `f` reads them; a failure gives none (for the tables that only name
/// things: without them, things stay unnamed).
pub fn lenient_rows<T>(
    conn: &Connection,
    sql: &str,
    f: impl FnMut(&rusqlite::Row) -> rusqlite::Result<T>,
) -> Vec<T> {
    let Ok(mut stmt) = conn.prepare(sql) else {
        return Vec::new();
    };
    let Ok(it) = stmt.query_map([], f) else {
        return Vec::new();
    };
    it.flatten().collect()
}

/// Columns `a` and `b` of every row of `t` that passes `filter` (SQL), as optional values.
pub fn pairs<A: rusqlite::types::FromSql, B: rusqlite::types::FromSql>(
    conn: &Connection,
    t: &Table,
    (a, b): (&str, &str),
    filter: &str,
) -> Vec<(Option<A>, Option<B>)> {
    let sql = format!(
        "SELECT {}, {} FROM {} WHERE {filter}",
        t.col(a),
        t.col(b),
        t.sql_name()
    );
    lenient_rows(conn, &sql, |r| Ok((r.get(0)?, r.get(1)?)))
}

/// How many rows of `table` match `filter` (SQL), and the rowid of the first one.
pub fn rows_where(conn: &Connection, table: &Table, filter: &str) -> Result<(u64, i64)> {
    let name = table.sql_name();
    // a bare count(*) counts the b-tree's cells without decoding a row, and min(rowid) is one
    // seek: together about a quarter of the cost of one query that filters (1M rows: 30 ms
    // against 130 ms)
    let sql = match filter {
        "1" => format!(
            "SELECT (SELECT count(*) FROM {name}), (SELECT coalesce(min(rowid), 0) FROM {name})"
        ),
        _ => format!("SELECT count(*), coalesce(min(rowid), 0) FROM {name} WHERE {filter}"),
    };
    conn.query_row(&sql, [], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
        .map(|(n, first)| (n.max(0) as u64, first))
        .map_err(|e| {
            sqlite_error(
                Location::Row {
                    table: table.name.clone(),
                    rowid: 0,
                },
                "cannot count rows",
                e,
            )
        })
}

pub fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// A value that is not what its column should hold.
#[derive(Debug)]
pub struct BadValue {
    pub column: &'static str,
    pub found: String,
    pub wanted: &'static str,
}

impl BadValue {
    pub fn describe(&self) -> String {
        format!(
            "column {} holds {} where {} belongs",
            self.column, self.found, self.wanted
        )
    }
}

fn describe(v: ValueRef) -> String {
    match v {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(i) => format!("the integer {i}"),
        ValueRef::Real(f) => format!("the real number {f}"),
        ValueRef::Text(t) => {
            let s = String::from_utf8_lossy(t);
            let short: String = s.chars().take(40).collect();
            format!("the text {short:?}")
        }
        ValueRef::Blob(b) => format!("a blob of {} bytes", b.len()),
    }
}

/// One row of a query (read on a reader thread or from a spool, decoded on the main one): its
/// packed cells and their batch's texts ([`crate::batch`]). Column 0 of every tracex query is
/// the rowid.
#[derive(Clone, Copy, Debug)]
pub struct Row<'a> {
    pub cells: &'a [Packed],
    /// The batch's texts ([`crate::batch::Batch::texts`]).
    pub texts: Texts<'a>,
}

impl<'a> Row<'a> {
    /// Cell `i` (NULL past the end).
    #[inline]
    pub fn get(&self, i: usize) -> ValueRef<'a> {
        (self.cells.get(i)).map_or(ValueRef::Null, |c| c.value_ref(self.texts))
    }
}

/// Reads the columns of one row in SELECT order, with typed getters whose errors name the
/// column.
///
/// It borrows the row: a copy of it, made as the row had just been written, was half of the
/// decoding of a CUDA API row (a wide load waiting on the narrow stores just made).
pub struct Cols<'a, 'r> {
    row: &'a Row<'r>,
    next: usize,
}

impl<'a, 'r> Cols<'a, 'r> {
    /// Starts after the rowid.
    pub fn new(row: &'a Row<'r>) -> Self {
        Cols { row, next: 1 }
    }

    #[inline]
    fn take(&mut self) -> ValueRef<'r> {
        let i = self.next;
        self.next += 1;
        self.row.get(i)
    }

    /// A required integer.
    #[inline]
    pub fn int(&mut self, column: &'static str) -> Result<i64, BadValue> {
        match self.take() {
            ValueRef::Integer(i) => Ok(i),
            other => Err(BadValue {
                column,
                found: describe(other),
                wanted: "an integer",
            }),
        }
    }

    /// An optional integer: NULL is `None`, anything but an integer is an error.
    #[inline]
    pub fn opt_int(&mut self, column: &'static str) -> Result<Option<i64>, BadValue> {
        match self.take() {
            ValueRef::Null => Ok(None),
            ValueRef::Integer(i) => Ok(Some(i)),
            other => Err(BadValue {
                column,
                found: describe(other),
                wanted: "an integer or NULL",
            }),
        }
    }

    /// Optional text; numbers are rendered as text, blobs decoded lossily.
    pub fn opt_text(&mut self) -> Option<String> {
        match self.take() {
            ValueRef::Null => None,
            ValueRef::Integer(i) => Some(i.to_string()),
            ValueRef::Real(f) => Some(f.to_string()),
            ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
        }
    }

    /// The next cell as it is stored (`None` past the row's end).
    #[inline]
    pub fn next_packed(&mut self) -> Option<Packed> {
        let i = self.next;
        self.next += 1;
        self.row.cells.get(i).copied()
    }

    /// Appends the next cell, as [`Cols::raw`] reads it, to `args` under `key()`; NULL
    /// appends nothing (and asks for no key).
    #[inline]
    pub fn push_raw(&mut self, args: &mut Args, key: impl FnOnce() -> StrId) {
        if let Some(cell) = self.next_packed() {
            self.push_cell(cell, args, key);
        }
    }

    /// [`Cols::push_raw`] of a cell of this row already read.
    #[inline]
    pub fn push_cell(&self, cell: Packed, args: &mut Args, key: impl FnOnce() -> StrId) {
        use tracex_ir::Value;
        match cell {
            Packed::Null => {}
            Packed::Int(v) => push_arg(args, key(), || Value::Int(v)),
            Packed::Real(f) => push_arg(args, key(), || Value::Float(f)),
            other => {
                if let Some(v) = bytes_value(other, self.row.texts) {
                    push_arg(args, key(), || v)
                }
            }
        }
    }

    /// Any value as an IR value; NULL is `None`. Inline, on the cell itself: it reads most of
    /// a kernel's arguments (the borrowed form in between was 3% of the merge's thread).
    #[inline]
    pub fn raw(&mut self) -> Option<tracex_ir::Value> {
        use tracex_ir::Value;
        match self.next_packed()? {
            Packed::Null => None,
            Packed::Int(v) => Some(Value::Int(v)),
            Packed::Real(f) => Some(Value::Float(f)),
            other => bytes_value(other, self.row.texts),
        }
    }
}

/// A text or blob cell as an IR value: rare in the big tables, so kept out of [`Cols::raw`].
#[cold]
#[inline(never)]
fn bytes_value(cell: Packed, texts: Texts) -> Option<tracex_ir::Value> {
    use tracex_ir::Value;
    Some(match cell.value_ref(texts) {
        ValueRef::Null => return None,
        ValueRef::Integer(v) => Value::Int(v),
        ValueRef::Real(f) => Value::Float(f),
        ValueRef::Text(t) => Value::str(String::from_utf8_lossy(t)),
        ValueRef::Blob(b) => Value::str(format!("<{} bytes>", b.len())),
    })
}

/// `v` as an owned value. Text that is not UTF-8 is decoded lossily: rusqlite's own conversion
/// panics on it, and a damaged or hand-made export may hold such bytes. Integers and NULLs
/// (most cells) take no allocation.
#[inline]
pub fn owned(v: ValueRef) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Integer(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

/// The rowid in column 0 (0 when the query has none).
#[inline]
pub fn rowid(row: &Row) -> i64 {
    match row.get(0) {
        ValueRef::Integer(i) => i,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_uri_characters() {
        assert_eq!(
            uri_escape(Path::new("/tmp/a b?#%.sqlite")),
            "/tmp/a%20b%3F%23%25.sqlite"
        );
    }

    #[test]
    fn resolves_versioned_names() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE NVTX_EVENTS_V2 (start INTEGER); CREATE TABLE NVTX_EVENTS_V3 (start INTEGER, x);
             CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);",
        )
        .unwrap();
        let s = Schema::probe(&conn, &Location::Nowhere).unwrap();
        assert_eq!(s.resolve("NVTX_EVENTS"), Some("NVTX_EVENTS_V3"));
        assert_eq!(s.resolve("stringids"), Some("StringIds"));
        assert_eq!(s.resolve("CUPTI_ACTIVITY_KIND_KERNEL"), None);
        let t = s.table("NVTX_EVENTS").unwrap();
        assert_eq!(t.select_list(&["start", "end"]), "\"start\", NULL");
    }
}
