//! Rows of a query as the readers step through them: from SQLite, or, for a plain scan of a
//! table that [`crate::pages`] takes, from the file's pages. Both give cells as SQLite's
//! `ValueRef`, so a reader does not know which it got.

use std::path::Path;

use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, Statement};
use tracex_ir::{Location, Result};

use crate::batch::Batch;
use crate::db::{rows_where, sqlite_error, Table};
use crate::pages::{Layout, PageRow, PageScan};

pub use crate::pages::Filter;

/// A query that is a plain scan, `SELECT rowid, <columns> FROM table [WHERE <filter>]`, in
/// the terms the page reader can run (the same query as SQL is kept beside it).
#[derive(Clone, Debug)]
pub struct ScanSpec {
    pub table: Table,
    /// Columns after the rowid; one the table lacks reads as NULL.
    pub columns: Vec<String>,
    pub filter: Option<(String, Filter)>,
}

impl ScanSpec {
    pub fn new(table: &Table, columns: &[&str]) -> ScanSpec {
        ScanSpec {
            table: table.clone(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            filter: None,
        }
    }

    pub fn filtered(mut self, column: &str, filter: Filter) -> ScanSpec {
        self.filter = Some((column.to_string(), filter));
        self
    }

    /// The page scan of this spec on `conn`'s file, when the file and the table allow one.
    fn pages(&self, conn: &Connection) -> Option<PageScan> {
        if std::env::var_os("TRACEX_NSYS_SQLITE_SCANS").is_some() {
            return None; // every scan through SQLite (to compare both ways)
        }
        let path = Path::new(conn.path().filter(|p| !p.is_empty())?);
        let columns: Vec<&str> = self.columns.iter().map(String::as_str).collect();
        let filter = self.filter.as_ref().map(|(c, f)| (c.as_str(), f.clone()));
        let layout = Layout::of(conn, &self.table, &columns, filter)?;
        PageScan::open(path, &self.table.name, &layout)
            .ok()
            .flatten()
    }
}

/// How many rows `table` has, and the rowid of the first (0 when it has none): from the
/// file's pages when the table allows ([`PageScan::count`], no record read), else from SQLite.
pub fn rows(conn: &Connection, table: &Table) -> Result<(u64, i64)> {
    match ScanSpec::new(table, &[]).pages(conn) {
        Some(scan) => scan.count(),
        None => rows_where(conn, table, "1"),
    }
}

/// The number of rows of a table (for progress, sizing and accounting).
pub fn row_count(conn: &Connection, table: &Table) -> Result<u64> {
    rows(conn, table).map(|(n, _)| n)
}

/// How many rows of `table` pass `filter` on `column`, and the rowid of the first (0 when
/// none does): from the file's pages when the table allows, else from SQLite.
pub fn count_where(
    conn: &Connection,
    table: &Table,
    (column, filter): (&str, Filter),
) -> Result<(u64, i64)> {
    let spec = ScanSpec::new(table, &[]).filtered(column, filter.clone());
    let Some(mut scan) = spec.pages(conn) else {
        return rows_where(conn, table, &filter.sql(&table.col(column)));
    };
    let (mut n, mut first) = (0u64, None);
    while let Some(row) = scan.next()? {
        first.get_or_insert(row.rowid);
        n += 1;
    }
    Ok((n, first.unwrap_or(0)))
}

/// The rows of one query.
pub enum ScanRows<'s> {
    Sql {
        rows: rusqlite::Rows<'s>,
        table: String,
        doing: String,
        last: i64,
        /// A plain scan, whose rowids must rise (a damaged b-tree may give them out of order,
        /// which the readers that reorder rows by rowid cannot take).
        plain: bool,
    },
    Pages(Box<PageScan>),
}

/// One row: cell 0 is the rowid.
pub enum ScanRow<'r> {
    Sql(&'r rusqlite::Row<'r>),
    Pages(PageRow<'r>),
}

impl ScanRow<'_> {
    #[inline]
    pub fn get(&self, i: usize) -> ValueRef<'_> {
        match self {
            ScanRow::Sql(r) => r.get_ref(i).unwrap_or(ValueRef::Null),
            ScanRow::Pages(r) => r.get(i),
        }
    }

    /// The rowid (column 0), 0 when it is not an integer.
    pub fn rowid(&self) -> i64 {
        match self.get(0) {
            ValueRef::Integer(r) => r,
            _ => 0,
        }
    }
}

impl<'s> ScanRows<'s> {
    /// Runs `sql` (with `params`) on `conn`, or `spec`'s page scan when there is one; `stmt`
    /// holds the prepared statement the rows borrow. Errors say they were `doing` it.
    pub fn open<'c: 's>(
        conn: &'c Connection,
        (sql, params): (&str, &[SqlValue]),
        spec: Option<&ScanSpec>,
        stmt: &'s mut Option<Statement<'c>>,
        (table, doing): (&str, &str),
    ) -> Result<ScanRows<'s>> {
        if let Some(scan) = spec.and_then(|s| s.pages(conn)) {
            return Ok(ScanRows::Pages(Box::new(scan)));
        }
        let at = || Location::Row {
            table: table.to_string(),
            rowid: 0,
        };
        let prepared = conn
            .prepare(sql)
            .map_err(|e| sqlite_error(at(), doing, e))?;
        let stmt = stmt.insert(prepared);
        let rows = stmt
            .query(rusqlite::params_from_iter(params.iter()))
            .map_err(|e| sqlite_error(at(), doing, e))?;
        Ok(ScanRows::Sql {
            rows,
            table: table.to_string(),
            doing: doing.to_string(),
            last: i64::MIN,
            plain: spec.is_some(),
        })
    }

    /// Columns of a row, the rowid included.
    pub fn columns(&self) -> usize {
        match self {
            ScanRows::Sql { rows, .. } => rows.as_ref().map_or(0, |s| s.column_count()),
            ScanRows::Pages(scan) => scan.columns(),
        }
    }

    /// Appends the next row's cells to `out`; false at the end.
    pub fn next_packed(&mut self, out: &mut Batch) -> Result<bool> {
        if let ScanRows::Pages(scan) = self {
            return scan.next_packed(out);
        }
        let columns = self.columns();
        match self.next()? {
            Some(row) => {
                for i in 0..columns {
                    out.push_ref(row.get(i));
                }
                Ok(true)
            }
            None => Ok(false),
        }
    }

    pub fn next(&mut self) -> Result<Option<ScanRow<'_>>> {
        match self {
            ScanRows::Sql {
                rows,
                table,
                doing,
                last,
                plain,
            } => match rows.next() {
                Ok(Some(row)) => {
                    if let Ok(ValueRef::Integer(r)) = row.get_ref(0) {
                        if *plain && r <= *last {
                            let at = Location::Row {
                                table: table.clone(),
                                rowid: r,
                            };
                            let why = format!("{doing}: the database is damaged: rowid {r} is out of order; nsys exports can be checked with `sqlite3 FILE 'PRAGMA integrity_check'`");
                            return Err(tracex_ir::Error::invalid(at, why));
                        }
                        *last = r;
                    }
                    Ok(Some(ScanRow::Sql(row)))
                }
                Ok(None) => Ok(None),
                Err(e) => {
                    let at = Location::Row {
                        table: table.clone(),
                        rowid: (*last).max(0),
                    };
                    Err(sqlite_error(at, doing, e))
                }
            },
            ScanRows::Pages(scan) => Ok(scan.next()?.map(ScanRow::Pages)),
        }
    }
}
