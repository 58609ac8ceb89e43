//! Full scans of a table read straight from the file's pages, for the big event tables. Going
//! through SQLite cost about 1.4 µs per kernel row (its virtual machine, then one call per cell
//! for the type and one for the value) and was half the CPU time of an nsys import; walking the
//! table's b-tree and decoding the records here costs a small part of that.
//!
//! Only what SQLite's file format guarantees for a rowid table is assumed
//! (<https://www.sqlite.org/fileformat2.html>): a rollback-journal database (not WAL), UTF-8 text,
//! table b-tree pages (interior 0x05, leaf 0x0d), records that spill onto overflow pages. A
//! table this reader does not take (a primary key, which may alias the rowid; a generated or
//! defaulted column, which the record may not hold; WITHOUT ROWID) and a file it does not take
//! are read through SQLite as before, and so is every query that is more than a scan. Anything
//! inconsistent met on the way (a page number out of the file, a loop, a cell out of its page)
//! is an error that names the table and the page: never a panic, never an endless walk.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::batch::{Batch, Packed};
use crate::db::Table;

/// A table scan's columns and filter, in the terms of the table's records.
#[derive(Clone, Debug)]
pub struct Layout {
    root: u32,
    /// Record field of each output column after the rowid (`None`: a column the table lacks,
    /// always NULL), and whether it has REAL affinity (integers stored for it read as REAL).
    fields: Vec<Option<(usize, bool)>>,
    /// Rows pass when this field passes.
    filter: Option<(usize, Filter)>,
    /// The last record field read (of the columns and the filter).
    last: Option<usize>,
}

/// A condition on one integer column, as SQL compares it (a REAL equal to the integer matches;
/// NULL, text and blobs match no integer).
#[derive(Clone, Debug)]
pub enum Filter {
    /// `col IN (values)`
    In(Vec<i64>),
    /// `col IS NOT value` (NULL passes)
    IsNot(i64),
}

impl Filter {
    /// The filter as an SQL condition on `col` (a quoted column name).
    pub fn sql(&self, col: &str) -> String {
        match self {
            Filter::In(values) => {
                let list: Vec<String> = values.iter().map(i64::to_string).collect();
                format!("{col} IN ({})", list.join(", "))
            }
            Filter::IsNot(x) => format!("{col} IS NOT {x}"),
        }
    }

    fn passes(&self, cell: Cell) -> bool {
        let equals = |x: i64| match cell {
            Cell::Int(v) => v == x,
            Cell::Real(v) => x as f64 == v,
            _ => false,
        };
        match self {
            Filter::In(values) => values.iter().any(|&x| equals(x)),
            Filter::IsNot(x) => !equals(*x),
        }
    }
}

/// One column of a table as `pragma_table_xinfo` describes it.
struct ColumnInfo {
    name: String,
    decl: String,
    default: bool,
    pk: bool,
    hidden: bool,
}

/// SQLite's column affinity rule 4: REAL for a declared type with REAL, FLOA or DOUB (and
/// none of the earlier rules' INT, CHAR, CLOB, TEXT, BLOB).
fn real_affinity(decl: &str) -> bool {
    let d = decl.to_ascii_uppercase();
    let earlier = ["INT", "CHAR", "CLOB", "TEXT", "BLOB"];
    !earlier.iter().any(|w| d.contains(w)) && ["REAL", "FLOA", "DOUB"].iter().any(|w| d.contains(w))
}

impl Layout {
    /// The layout of `SELECT rowid, <columns> FROM table [WHERE filter IN (values)]`, or `None`
    /// when the table is one SQLite must read (see the module documentation).
    pub fn of(
        conn: &Connection,
        table: &Table,
        columns: &[&str],
        filter: Option<(&str, Filter)>,
    ) -> Option<Layout> {
        let root: i64 = conn
            .query_row(
                "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?1 \
                 AND upper(sql) NOT LIKE '%WITHOUT%ROWID%'",
                [&table.name],
                |r| r.get(0),
            )
            .ok()?;
        let mut stmt = conn
            .prepare(
                "SELECT name, coalesce(type, ''), dflt_value IS NOT NULL, pk, hidden \
                 FROM pragma_table_xinfo(?1) ORDER BY cid",
            )
            .ok()?;
        let info: Vec<ColumnInfo> = stmt
            .query_map([&table.name], |r| {
                Ok(ColumnInfo {
                    name: r.get(0)?,
                    decl: r.get(1)?,
                    default: r.get(2)?,
                    pk: r.get::<_, i64>(3)? != 0,
                    hidden: r.get::<_, i64>(4)? != 0,
                })
            })
            .ok()?
            .collect::<rusqlite::Result<_>>()
            .ok()?;
        if info.is_empty() || info.iter().any(|c| c.default || c.pk || c.hidden) {
            return None;
        }
        let field = |name: &str| {
            let i = info
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(name))?;
            Some((i, real_affinity(&info[i].decl)))
        };
        let fields = columns.iter().map(|c| field(c)).collect();
        let filter = match filter {
            Some((col, f)) => Some((field(col)?.0, f)),
            None => None,
        };
        let fields: Vec<Option<(usize, bool)>> = fields;
        let last = (fields.iter().flatten().map(|f| f.0))
            .chain(filter.as_ref().map(|f| f.0))
            .max();
        Some(Layout {
            root: u32::try_from(root).ok().filter(|&r| r > 0)?,
            fields,
            filter,
            last,
        })
    }
}

/// The database file as pages.
struct Pages {
    file: File,
    size: usize,
    /// Bytes of a page that hold data (the rest is reserved for extensions).
    usable: usize,
    count: u32,
    ahead: ReadAhead,
}

/// Pages read ahead while a scan asks for them one after the other (the leaves of a table that
/// was written at once lie in page order): one read for up to [`AHEAD_BYTES`], where a read per
/// page (and a seek) made 170,000 system calls on a 1M-kernel export.
#[derive(Default)]
struct ReadAhead {
    bytes: Vec<u8>,
    /// The first page held and how many.
    first: u32,
    held: u32,
    /// The page asked last, and the pages the next read fetches when the next one is asked.
    last: u32,
    window: u32,
}

/// Bytes read at once at most.
const AHEAD_BYTES: usize = 256 << 10;

/// The most b-tree levels a scan descends (SQLite's deepest trees have about 20).
const MAX_DEPTH: usize = 64;

impl Pages {
    /// The file at `path`, or `None` when it is not a database this reader takes.
    fn open(path: &Path) -> std::io::Result<Option<Pages>> {
        let mut file = File::open(path)?;
        let mut h = [0u8; 100];
        if file.read_exact(&mut h).is_err() || &h[..16] != b"SQLite format 3\0" {
            return Ok(None);
        }
        let size = match u16::from_be_bytes([h[16], h[17]]) {
            1 => 65536,
            s => s as usize,
        };
        // rollback journal (1, 1) only: a WAL database may have pages newer than the file's
        let (write, read) = (h[18], h[19]);
        let encoding = u32::from_be_bytes([h[56], h[57], h[58], h[59]]);
        let usable = size.saturating_sub(h[20] as usize);
        if !size.is_power_of_two() || !(512..=65536).contains(&size) || usable < 480 {
            return Ok(None);
        }
        if (write, read) != (1, 1) || encoding != 1 {
            return Ok(None);
        }
        let len = file.metadata()?.len();
        let count = u32::try_from(len / size as u64).unwrap_or(u32::MAX);
        Ok(Some(Pages {
            file,
            size,
            usable,
            count,
            ahead: ReadAhead::default(),
        }))
    }

    /// An error unless page `n` (from 1) is in the file.
    fn check(&self, n: u32) -> Result<(), String> {
        if n == 0 || n > self.count {
            return Err(format!(
                "page {n} is outside the file ({} pages)",
                self.count
            ));
        }
        Ok(())
    }

    /// Reads page `n` (from 1) into `buf`.
    fn read(&mut self, n: u32, buf: &mut Vec<u8>) -> Result<(), String> {
        self.check(n)?;
        let a = &mut self.ahead;
        if !(a.first..a.first + a.held).contains(&n) {
            // the window doubles while pages are asked in order, and is one page otherwise
            let most = (AHEAD_BYTES / self.size).max(1) as u32;
            a.window = match n == a.last.wrapping_add(1) {
                true => (a.window * 2).clamp(1, most),
                false => 1,
            };
            let pages = a.window.min(self.count - n + 1);
            a.bytes.resize(pages as usize * self.size, 0);
            a.held = 0;
            let at = (n as u64 - 1) * self.size as u64;
            self.file
                .read_exact_at(&mut a.bytes, at)
                .map_err(|e| format!("cannot read page {n}: {e}"))?;
            (a.first, a.held) = (n, pages);
        }
        a.last = n;
        let from = (n - a.first) as usize * self.size;
        buf.clear();
        buf.extend_from_slice(&a.bytes[from..from + self.size]);
        Ok(())
    }

    /// The kind and number of cells of page `n`, from the first bytes of its b-tree header
    /// alone (past the file header on page 1).
    fn kind_and_cells(&self, n: u32) -> Result<(u8, usize), String> {
        self.check(n)?;
        let header = if n == 1 { 100 } else { 0 };
        let mut b = [0u8; 5];
        let at = (n as u64 - 1) * self.size as u64 + header;
        self.file
            .read_exact_at(&mut b, at)
            .map_err(|e| format!("cannot read page {n}: {e}"))?;
        Ok((b[0], u16::from_be_bytes([b[3], b[4]]) as usize))
    }
}

/// A page in memory and where its b-tree header starts (100 on page 1).
struct Page {
    n: u32,
    bytes: Vec<u8>,
    header: usize,
}

impl Page {
    fn kind(&self) -> u8 {
        self.bytes[self.header]
    }

    fn u16_at(&self, i: usize) -> Result<usize, String> {
        match self.bytes.get(i..i + 2) {
            Some(b) => Ok(u16::from_be_bytes([b[0], b[1]]) as usize),
            None => Err(format!("page {} ends inside its header", self.n)),
        }
    }

    fn cells(&self) -> Result<usize, String> {
        self.u16_at(self.header + 3)
    }

    /// Where cell `i` starts: its pointer follows the header (12 bytes interior, 8 leaf).
    fn cell(&self, i: usize) -> Result<usize, String> {
        let header = if self.kind() == INTERIOR { 12 } else { 8 };
        let at = self.u16_at(self.header + header + 2 * i)?;
        if at >= self.bytes.len() {
            return Err(format!("cell {i} of page {} is outside it", self.n));
        }
        Ok(at)
    }

    fn u32_at(&self, i: usize) -> Result<u32, String> {
        match self.bytes.get(i..i + 4) {
            Some(b) => Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
            None => Err(format!("page {} ends inside a cell", self.n)),
        }
    }
}

const INTERIOR: u8 = 0x05;
const LEAF: u8 = 0x0d;

/// A varint at `b[i..]`: its value and length.
#[inline]
fn varint(b: &[u8], i: usize) -> Option<(u64, usize)> {
    // most are one byte: serial types of integers and short text, small sizes
    let first = *b.get(i)?;
    if first < 0x80 {
        return Some((first as u64, 1));
    }
    let mut v = 0u64;
    for k in 0..9 {
        let byte = *b.get(i + k)?;
        if k == 8 {
            return Some(((v << 8) | byte as u64, 9));
        }
        v = (v << 7) | (byte & 0x7f) as u64;
        if byte & 0x80 == 0 {
            return Some((v, k + 1));
        }
    }
    None
}

/// One cell of a row: where its bytes are in the record, or its value.
#[derive(Clone, Copy, Debug)]
enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(usize, usize),
    Blob(usize, usize),
}

/// A leaf cell's rowid and where its record is: in the leaf (offset, length), or (`None`)
/// gathered from overflow pages.
type CellAt = (i64, Option<(usize, usize)>);

/// A row of a page scan: the rowid and the selected cells.
pub struct PageRow<'a> {
    pub rowid: i64,
    cells: &'a [Cell],
    record: &'a [u8],
}

impl PageRow<'_> {
    /// Column `i` of `SELECT rowid, <columns>`: 0 is the rowid.
    #[inline]
    pub fn get(&self, i: usize) -> ValueRef<'_> {
        if i == 0 {
            return ValueRef::Integer(self.rowid);
        }
        match self.cells.get(i - 1) {
            None | Some(Cell::Null) => ValueRef::Null,
            Some(Cell::Int(v)) => ValueRef::Integer(*v),
            Some(Cell::Real(v)) => ValueRef::Real(*v),
            Some(Cell::Text(at, n)) => ValueRef::Text(&self.record[*at..*at + *n]),
            Some(Cell::Blob(at, n)) => ValueRef::Blob(&self.record[*at..*at + *n]),
        }
    }

    /// Columns in the query, the rowid included.
    #[cfg(test)]
    pub fn columns(&self) -> usize {
        self.cells.len() + 1
    }
}

/// A full scan of one table in rowid order.
pub struct PageScan {
    pages: Pages,
    layout: Layout,
    table: String,
    /// Interior pages from the root down, with the next child to visit of each.
    path: Vec<(Page, usize)>,
    leaf: Page,
    /// The next cell of `leaf`, and its number of cells.
    next: usize,
    leaf_cells: usize,
    /// Pages read so far: more than the file holds means a loop.
    visited: u64,
    /// The rowid of the last row read: a table's rowids rise along its leaves.
    last_rowid: Option<i64>,
    /// The record of a row that spilled onto overflow pages.
    spilled: Vec<u8>,
    spare: Vec<u8>,
    /// (serial type, offset) of the fields of the current record.
    types: Vec<(u64, usize)>,
    cells: Vec<Cell>,
    started: bool,
}

impl PageScan {
    /// A scan of `layout`'s table in the file at `path`, or `None` when the file is not one
    /// this reader takes.
    pub fn open(path: &Path, table: &str, layout: &Layout) -> std::io::Result<Option<PageScan>> {
        let Some(pages) = Pages::open(path)? else {
            return Ok(None);
        };
        Ok(Some(PageScan {
            pages,
            layout: layout.clone(),
            table: table.to_string(),
            path: Vec::new(),
            leaf: Page {
                n: 0,
                bytes: Vec::new(),
                header: 0,
            },
            next: 0,
            leaf_cells: 0,
            visited: 0,
            last_rowid: None,
            spilled: Vec::new(),
            spare: Vec::new(),
            types: Vec::new(),
            cells: Vec::with_capacity(layout.fields.len()),
            started: false,
        }))
    }

    /// Columns of a row, the rowid included.
    pub fn columns(&self) -> usize {
        self.layout.fields.len() + 1
    }

    /// A damaged page met at row `rowid` (0 when the row is not known).
    fn damaged(&self, what: String, rowid: i64) -> tracex_ir::Error {
        tracex_ir::Error::invalid(
            tracex_ir::Location::Row {
                table: self.table.clone(),
                rowid,
            },
            format!(
                "the database is damaged: {what}; nsys exports can be checked with `sqlite3 FILE 'PRAGMA integrity_check'`"
            ),
        )
    }

    /// Reads page `n` of the tree (a table page) into a page of its own.
    fn load(&mut self, n: u32, mut bytes: Vec<u8>) -> Result<Page, String> {
        self.visit()?;
        self.pages.read(n, &mut bytes)?;
        let page = Page {
            n,
            bytes,
            header: if n == 1 { 100 } else { 0 },
        };
        match page.kind() {
            INTERIOR | LEAF => Ok(page),
            k => Err(format!("page {n} is not a table page (type {k:#04x})")),
        }
    }

    /// Counts a page of the tree visited: more than the file holds means a loop.
    fn visit(&mut self) -> Result<(), String> {
        self.visited += 1;
        if self.visited > self.pages.count as u64 + 1 {
            return Err(format!("the b-tree of table {} loops", self.table));
        }
        Ok(())
    }

    /// Moves to the next leaf; false at the end of the table.
    fn next_leaf(&mut self) -> Result<bool, String> {
        if !self.started {
            self.started = true;
            let root = self.load(self.layout.root, Vec::new())?;
            if self.descend(root)? {
                return Ok(true);
            }
        }
        while let Some(child) = self.next_child()? {
            let spare = std::mem::take(&mut self.spare);
            let page = self.load(child, spare)?;
            if self.descend(page)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The next page below the interior pages of the path (leaving those whose children were
    /// all visited); `None` once the whole tree was.
    fn next_child(&mut self) -> Result<Option<u32>, String> {
        while let Some((page, next)) = self.path.last_mut() {
            let cells = page.cells()?;
            if *next > cells {
                self.path.pop();
                continue;
            }
            // cells left to right, then the right-most pointer in the header
            let child = if *next < cells {
                let at = page.cell(*next)?;
                page.u32_at(at)?
            } else {
                page.u32_at(page.header + 8)?
            };
            *next += 1;
            return Ok(Some(child));
        }
        Ok(None)
    }

    /// Enters `page`: a leaf becomes the current one, an interior page goes on the path.
    fn descend(&mut self, page: Page) -> Result<bool, String> {
        if page.kind() == LEAF {
            let old = std::mem::replace(&mut self.leaf, page);
            self.spare = old.bytes;
            self.next = 0;
            self.leaf_cells = self.leaf.cells()?;
            return Ok(true);
        }
        if self.path.len() >= MAX_DEPTH {
            return Err(format!("the b-tree of table {} is too deep", self.table));
        }
        self.path.push((page, 0));
        Ok(false)
    }

    /// The next cell of the table: its rowid and where its record is ([`PageScan::read_cell`]).
    fn next_cell(&mut self) -> tracex_ir::Result<Option<CellAt>> {
        while self.next >= self.leaf_cells {
            match self.next_leaf() {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                Err(e) => return Err(self.damaged(e, 0)),
            }
        }
        let cell = self.next;
        self.next += 1;
        match self.read_cell(cell) {
            Ok(r) => Ok(Some(r)),
            Err(e) => Err(self.damaged(e, 0)),
        }
    }

    /// The number of rows and the rowid of the first (0 in an empty table), from the cell counts
    /// of the leaves: no record is read. SQLite's `count(*)` reads the same pages a call each,
    /// and counting the big tables once per stream was 90 ms of the import's start (1M kernels).
    /// Of a leaf only the first bytes of its header are read, where reading whole leaves (the
    /// kernel copying 4 KiB for every 5 bytes used) took 70 ms on the thread that indexes GPU
    /// work for the launch join, before the first row could be joined; the first non-empty
    /// leaf is read whole, for its first rowid.
    pub fn count(mut self) -> tracex_ir::Result<(u64, i64)> {
        self.count_cells().map_err(|e| self.damaged(e, 0))
    }

    fn count_cells(&mut self) -> Result<(u64, i64), String> {
        let root = self.load(self.layout.root, Vec::new())?;
        if self.descend(root)? {
            let first = match self.leaf_cells {
                0 => 0,
                _ => self.read_cell(0)?.0,
            };
            return Ok((self.leaf_cells as u64, first));
        }
        let (mut rows, mut first) = (0u64, None);
        while let Some(child) = self.next_child()? {
            let (kind, n) = self.pages.kind_and_cells(child)?;
            if kind == LEAF && (n == 0 || first.is_some()) {
                self.visit()?;
                rows += n as u64;
                continue;
            }
            // an interior page (or another kind, which `load` rejects), or the first leaf
            let page = self.load(child, Vec::new())?;
            if self.descend(page)? {
                first = Some(self.read_cell(0)?.0);
                rows += self.leaf_cells as u64;
            }
        }
        Ok((rows, first.unwrap_or(0)))
    }

    /// The next row that passes the filter, or `None` at the end of the table.
    pub fn next(&mut self) -> tracex_ir::Result<Option<PageRow<'_>>> {
        let (rowid, inline) = loop {
            let Some((rowid, inline)) = self.next_cell()? else {
                return Ok(None);
            };
            let record = record(&self.leaf.bytes, &self.spilled, inline);
            match decode(record, &self.layout, (&mut self.types, &mut self.cells)) {
                Ok(true) => break (rowid, inline),
                Ok(false) => continue,
                Err(e) => return Err(self.damaged(e, rowid)),
            }
        };
        Ok(Some(PageRow {
            rowid,
            cells: &self.cells,
            record: record(&self.leaf.bytes, &self.spilled, inline),
        }))
    }

    /// Appends the next row that passes the filter to `out` as packed cells (rowid first,
    /// then the columns); false at the end of the table. The same rows as
    /// [`PageScan::next`], without the borrowed form in between, for the readers that hand
    /// rows on.
    pub fn next_packed(&mut self, out: &mut Batch) -> tracex_ir::Result<bool> {
        loop {
            let Some((rowid, inline)) = self.next_cell()? else {
                return Ok(false);
            };
            let record = record(&self.leaf.bytes, &self.spilled, inline);
            match decode_packed((rowid, record), &self.layout, &mut self.types, out) {
                Ok(true) => return Ok(true),
                Ok(false) => continue,
                Err(e) => return Err(self.damaged(e, rowid)),
            }
        }
    }

    /// The rowid of leaf cell `i` and where its record is: in the leaf (offset, length), or
    /// (`None`) gathered into `spilled` from the overflow pages.
    ///
    /// Inline, with the overflow pages read apart: returned in memory, the cell was copied out
    /// by wide loads waiting on the narrow stores that had just made it, two thirds of
    /// [`PageScan::next_cell`].
    #[inline(always)]
    fn read_cell(&mut self, i: usize) -> Result<CellAt, String> {
        let leaf = &self.leaf;
        let at = leaf.cell(i)?;
        let b = &leaf.bytes;
        let bad = || format!("cell {i} of page {} is cut off", leaf.n);
        let (payload, n1) = varint(b, at).ok_or_else(bad)?;
        let (rowid, n2) = varint(b, at + n1).ok_or_else(bad)?;
        let rowid = rowid as i64;
        if self.last_rowid.is_some_and(|last| rowid <= last) {
            return Err(format!("rowid {rowid} of page {} is out of order", leaf.n));
        }
        self.last_rowid = Some(rowid);
        let start = at + n1 + n2;
        let u = self.pages.usable;
        let max_local = u - 35;
        let payload = usize::try_from(payload).map_err(|_| bad())?;
        if payload <= max_local {
            if start + payload > b.len() {
                return Err(bad());
            }
            return Ok((rowid, Some((start, payload))));
        }
        self.gather(i, rowid, start, payload)
    }

    /// The record of a cell whose first bytes (from `start`) are in the leaf and the rest on a
    /// chain of overflow pages, gathered into `spilled`.
    #[inline(never)]
    fn gather(
        &mut self,
        i: usize,
        rowid: i64,
        start: usize,
        payload: usize,
    ) -> Result<CellAt, String> {
        let leaf = &self.leaf;
        let b = &leaf.bytes;
        let u = self.pages.usable;
        let max_local = u - 35;
        let bad = || format!("cell {i} of page {} is cut off", leaf.n);
        // the first bytes in the leaf, the rest on a chain of overflow pages
        let min_local = (u - 12) * 32 / 255 - 23;
        let k = min_local + (payload - min_local) % (u - 4);
        let local = if k <= max_local { k } else { min_local };
        let first = b.get(start..start + local).ok_or_else(bad)?;
        let mut next = leaf.u32_at(start + local)?;
        let mut record = std::mem::take(&mut self.spilled);
        record.clear();
        record.extend_from_slice(first);
        let mut page = std::mem::take(&mut self.spare);
        while record.len() < payload {
            self.visited += 1;
            if next == 0 || self.visited > self.pages.count as u64 + 1 {
                return Err(format!("the overflow chain of row {rowid} is broken"));
            }
            self.pages.read(next, &mut page)?;
            let take = (payload - record.len()).min(u - 4);
            record.extend_from_slice(&page[4..4 + take]);
            next = u32::from_be_bytes([page[0], page[1], page[2], page[3]]);
        }
        self.spare = page;
        self.spilled = record;
        Ok((rowid, None))
    }
}

/// The bytes of the current record ([`PageScan::read_cell`]): in the leaf at `inline`, or
/// gathered into `spilled`. Free of the scan, so that the scan's other fields stay writable.
fn record<'a>(leaf: &'a [u8], spilled: &'a [u8], inline: Option<(usize, usize)>) -> &'a [u8] {
    match inline {
        Some((at, len)) => &leaf[at..at + len],
        None => spilled,
    }
}

/// Reads the header of `record` into `found`: (serial type, offset of its bytes) of each field
/// up to the last one `layout` reads. False when the row does not pass the filter.
fn header(record: &[u8], layout: &Layout, found: &mut Vec<(u64, usize)>) -> Result<bool, String> {
    let (header, n) = varint(record, 0).ok_or("its record header is cut off")?;
    let header = usize::try_from(header).map_err(|_| "its record header is too long")?;
    if header > record.len() || header < n {
        return Err("its record header does not fit the record".into());
    }
    let wanted = layout.last;
    found.clear();
    if !one_byte_types(&record[n..header], wanted, header, found) {
        header_varints(record, (n, header), wanted, found)?;
    }
    // the offsets grow with the fields: checking the last one checks them all
    if found
        .last()
        .is_some_and(|&(t, at)| at.saturating_add(size_of_type(t)) > record.len())
    {
        return Err("a value runs past the end of its record".into());
    }
    if let Some((f, filter)) = &layout.filter {
        if !filter.passes(cell(record, found, *f, false)) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The number of bytes of a value of serial type `t` (0 for the reserved ones).
#[inline]
const fn size_of_type(t: u64) -> usize {
    match t {
        0 | 8..=11 => 0,
        1..=4 => t as usize,
        5 => 6,
        6 | 7 => 8,
        _ if (t - 12) / 2 > usize::MAX as u64 => usize::MAX,
        _ => ((t - 12) / 2) as usize,
    }
}

/// [`size_of_type`] of each one-byte serial type (at most 57).
const ONE_BYTE_SIZES: [u8; 128] = {
    let mut sizes = [0u8; 128];
    let mut t = 0;
    while t < 128 {
        sizes[t] = size_of_type(t as u64) as u8;
        t += 1;
    }
    sizes
};

/// The header's fast path: when the serial types of the fields up to `wanted` are one byte
/// each (integers, NULLs, text under 58 bytes: nearly every nsys row), reads them without
/// decoding varints. False, with `found` empty, when [`header_varints`] must read them.
#[inline]
fn one_byte_types(
    types: &[u8],
    wanted: Option<usize>,
    mut at_body: usize,
    found: &mut Vec<(u64, usize)>,
) -> bool {
    let Some(w) = wanted else {
        return true;
    };
    let types = &types[..types.len().min(w + 1)];
    // a byte under 0x80 is a whole varint, so these bytes are the first serial types; the
    // reserved types are left to the other path's error
    let (high, reserved) = types.iter().fold((0u8, false), |(high, reserved), &t| {
        (high | t, reserved | (t == 10) | (t == 11))
    });
    if high >= 0x80 || reserved {
        return false;
    }
    found.extend(types.iter().map(|&t| {
        let at = at_body;
        at_body += ONE_BYTE_SIZES[t as usize] as usize;
        (t as u64, at)
    }));
    true
}

/// Reads the serial types of the header `record[types.0..types.1]` into `found`, up to field
/// `wanted`, one varint at a time.
fn header_varints(
    record: &[u8],
    (mut at_type, header): (usize, usize),
    wanted: Option<usize>,
    found: &mut Vec<(u64, usize)>,
) -> Result<(), String> {
    let mut at_body = header;
    while at_type < header && wanted.is_some_and(|w| found.len() <= w) {
        let (t, len) = varint(record, at_type).ok_or("its record header is cut off")?;
        at_type += len;
        if t == 10 || t == 11 {
            return Err(format!("serial type {t} is reserved"));
        }
        found.push((t, at_body));
        at_body = at_body.saturating_add(size_of_type(t));
        if at_body > record.len() {
            return Err("a value runs past the end of its record".into());
        }
    }
    Ok(())
}

/// Field `f` of a record whose header [`header`] read into `found`: NULL past the fields the
/// record holds (a column added after the row was written); integers as REAL for a column of
/// REAL affinity, as SQLite reads them.
#[inline(always)]
fn cell(record: &[u8], found: &[(u64, usize)], f: usize, real: bool) -> Cell {
    let Some(&(t, at)) = found.get(f) else {
        return Cell::Null;
    };
    let int = |len: usize| match record.get(at..at + 8) {
        // eight bytes from the value's first, shifted down with its sign
        Some(b) => i64::from_be_bytes(b.try_into().expect("eight bytes")) >> (64 - 8 * len),
        None => {
            let mut v: i64 = if record[at] & 0x80 != 0 { -1 } else { 0 };
            for &byte in &record[at..at + len] {
                v = (v << 8) | byte as i64;
            }
            v
        }
    };
    let as_int = |v: i64| match real {
        true => Cell::Real(v as f64),
        false => Cell::Int(v),
    };
    match t {
        0 => Cell::Null,
        1..=4 => as_int(int(t as usize)),
        5 => as_int(int(6)),
        6 => as_int(int(8)),
        7 => {
            let mut b = [0u8; 8];
            b.copy_from_slice(&record[at..at + 8]);
            Cell::Real(f64::from_be_bytes(b))
        }
        8 => as_int(0),
        9 => as_int(1),
        t if t % 2 == 0 => Cell::Blob(at, ((t - 12) / 2) as usize),
        t => Cell::Text(at, ((t - 13) / 2) as usize),
    }
}

/// Reads the fields `layout` wants from `record` into `cells`; false when the row does not
/// pass the filter.
fn decode(
    record: &[u8],
    layout: &Layout,
    (found, cells): (&mut Vec<(u64, usize)>, &mut Vec<Cell>),
) -> Result<bool, String> {
    if !header(record, layout, found)? {
        return Ok(false);
    }
    cells.clear();
    cells.extend(layout.fields.iter().map(|f| match f {
        Some((f, real)) => cell(record, found, *f, *real),
        None => Cell::Null,
    }));
    Ok(true)
}

/// Appends the row's rowid and the fields `layout` wants from `record` to `out`; false (and
/// nothing appended) when the row does not pass the filter.
fn decode_packed(
    (rowid, record): (i64, &[u8]),
    layout: &Layout,
    found: &mut Vec<(u64, usize)>,
    out: &mut Batch,
) -> Result<bool, String> {
    if !header(record, layout, found)? {
        return Ok(false);
    }
    out.cells.push(Packed::Int(rowid));
    for f in &layout.fields {
        match f {
            None => out.cells.push(Packed::Null),
            Some((f, real)) => match cell(record, found, *f, *real) {
                Cell::Null => out.cells.push(Packed::Null),
                Cell::Int(v) => out.cells.push(Packed::Int(v)),
                Cell::Real(v) => out.cells.push(Packed::Real(v)),
                Cell::Text(at, n) => out.push_ref(ValueRef::Text(&record[at..at + n])),
                Cell::Blob(at, n) => out.push_ref(ValueRef::Blob(&record[at..at + n])),
            },
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{owned, Schema};
    use rusqlite::types::Value as SqlValue;

    /// Every row of `sql` through SQLite.
    fn by_sqlite(conn: &Connection, sql: &str) -> Vec<Vec<SqlValue>> {
        let mut stmt = conn.prepare(sql).unwrap();
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| (0..n).map(|i| r.get::<_, SqlValue>(i)).collect())
            .unwrap();
        rows.map(Result::unwrap).collect()
    }

    /// Every row of a page scan, read in both of its forms (borrowed, packed cells), which
    /// must agree.
    fn by_pages(path: &Path, table: &Table, layout: &Layout) -> Vec<Vec<SqlValue>> {
        let open = || PageScan::open(path, &table.name, layout).unwrap().unwrap();
        let mut scan = open();
        let mut out = Vec::new();
        while let Some(row) = scan.next().unwrap() {
            out.push((0..row.columns()).map(|i| owned(row.get(i))).collect());
        }
        let mut scan = open();
        let mut packed = Batch::default();
        while scan.next_packed(&mut packed).unwrap() {}
        assert_eq!(packed.to_rows(layout.fields.len() + 1), out, "next_packed");
        out
    }

    /// A new database file `t.sqlite` in a temporary directory, after `sql`.
    fn database(sql: &str) -> (tempfile::TempDir, std::path::PathBuf, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(sql).unwrap();
        (dir, path, conn)
    }

    /// [`database`] with 512-byte pages and table T of `rows` rows (a, b): a = 0, 1, …, and b
    /// the text `text` gives for a.
    fn small_database(
        rows: i64,
        text: impl Fn(i64) -> String,
    ) -> (tempfile::TempDir, std::path::PathBuf, Connection) {
        let (dir, path, conn) =
            database("PRAGMA page_size = 512; CREATE TABLE T (a INTEGER, b TEXT);");
        for i in 0..rows {
            conn.execute(
                "INSERT INTO T VALUES (?1, ?2)",
                rusqlite::params![i, text(i)],
            )
            .unwrap();
        }
        (dir, path, conn)
    }

    /// Rows of every size (inline, spilling onto one and many overflow pages), every serial
    /// type, NULLs, a column added later, a REAL column holding whole numbers, a tree several
    /// levels deep, deleted rows and a filter: the page reader gives what SQLite gives.
    #[test]
    fn scans_give_what_sqlite_gives() {
        let (_dir, path, conn) = database(
            "PRAGMA page_size = 1024;
             CREATE TABLE T (start INTEGER NOT NULL, end INTEGER, kind INTEGER, v REAL, name TEXT, b BLOB);",
        );
        let tx = conn.unchecked_transaction().unwrap();
        for i in 0..5000i64 {
            let big = 1i64 << (i % 63);
            let name = match i % 7 {
                0 => None,
                1 => Some("x".repeat((i as usize * 37) % 5000)),
                _ => Some(format!("kernel {i} ünïcode")),
            };
            let v: Option<f64> = match i % 4 {
                0 => Some(i as f64),
                1 => Some(i as f64 + 0.25),
                2 => None,
                _ => Some(-(i as f64) * 1e10),
            };
            let end = (i % 11 != 0).then(|| i.wrapping_mul(if i % 2 == 0 { big } else { -big }));
            let blob = (i % 13 == 0).then(|| vec![i as u8; (i as usize * 7) % 3000]);
            conn.execute(
                "INSERT INTO T VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                rusqlite::params![i, end, i % 5, v, name, blob],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        conn.execute_batch(
            "DELETE FROM T WHERE start % 17 = 3; ALTER TABLE T ADD COLUMN later INTEGER;
             INSERT INTO T VALUES (9999, 1, 2, 3, 'new', NULL, 42);",
        )
        .unwrap();
        let schema = Schema::probe(&conn, &tracex_ir::Location::Nowhere).unwrap();
        let t = schema.table("T").unwrap();
        let cols = ["start", "end", "kind", "v", "name", "b", "later", "missing"];
        let layout = Layout::of(&conn, &t, &cols, None).unwrap();
        let want = by_sqlite(
            &conn,
            "SELECT rowid, start, end, kind, v, name, b, later, NULL FROM T",
        );
        assert_eq!(want.len(), 4707);
        assert_eq!(by_pages(&path, &t, &layout), want);
        // counted from the leaves' headers, down a tree of several levels
        let scan = PageScan::open(&path, &t.name, &layout).unwrap().unwrap();
        assert!(scan.pages.count > 1000, "a tree of many pages");
        let SqlValue::Integer(first) = want[0][0] else {
            panic!("a rowid")
        };
        assert_eq!(scan.count().unwrap(), (4707, first));
        let filter = Some(("kind", Filter::In(vec![0, 3])));
        let layout = Layout::of(&conn, &t, &["name", "start"], filter).unwrap();
        let want = by_sqlite(
            &conn,
            "SELECT rowid, name, start FROM T WHERE kind IN (0, 3)",
        );
        assert!(want.len() > 1000);
        assert_eq!(by_pages(&path, &t, &layout), want);
        // NULLs pass IS NOT; a REAL equal to the integer does not
        conn.execute_batch("UPDATE T SET kind = NULL WHERE start % 9 = 1; UPDATE T SET kind = 2.0 WHERE start % 9 = 2; UPDATE T SET kind = 2.5 WHERE start % 9 = 4")
            .unwrap();
        let layout = Layout::of(&conn, &t, &["kind"], Some(("kind", Filter::IsNot(2)))).unwrap();
        let want = by_sqlite(&conn, "SELECT rowid, kind FROM T WHERE kind IS NOT 2");
        assert!(want.iter().any(|r| r[1] == SqlValue::Null));
        assert!(want.iter().any(|r| r[1] == SqlValue::Real(2.5)));
        assert_eq!(by_pages(&path, &t, &layout), want);
        // the count from the leaves is SQLite's, with the first rowid
        let counted = PageScan::open(&path, "T", &layout)
            .unwrap()
            .unwrap()
            .count()
            .unwrap();
        let want: (i64, i64) = conn
            .query_row("SELECT count(*), min(rowid) FROM T", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(counted, (want.0 as u64, want.1));
        conn.execute_batch("CREATE TABLE E (a INTEGER)").unwrap();
        let e = Schema::probe(&conn, &tracex_ir::Location::Nowhere).unwrap();
        let layout = Layout::of(&conn, &e.table("E").unwrap(), &["a"], None).unwrap();
        let scan = PageScan::open(&path, "E", &layout).unwrap().unwrap();
        assert_eq!(scan.count().unwrap(), (0, 0));
    }

    /// Pages read ahead are the file's pages, whatever the order they are asked in: forward
    /// (the window grows), backward, repeated, and up to the last page (the window is cut).
    #[test]
    fn pages_read_ahead_are_the_files() {
        let (_dir, path, _) = small_database(400, |_| "z".repeat(90));
        let file = std::fs::read(&path).unwrap();
        let mut pages = Pages::open(&path).unwrap().unwrap();
        let count = pages.count;
        assert_eq!(count as usize * 512, file.len());
        let order =
            (1..=count)
                .chain((1..=count).rev())
                .chain([3, 3, 4, 2, count, count - 1, count]);
        let mut buf = Vec::new();
        for n in order {
            pages.read(n, &mut buf).unwrap();
            let at = (n as usize - 1) * 512;
            assert!(buf == file[at..at + 512], "page {n}");
        }
        assert!(pages.read(count + 1, &mut buf).is_err());
        assert!(pages.read(0, &mut buf).is_err());
    }

    /// Text that is not UTF-8 (a damaged or hand-made export) is read lossily, by both forms
    /// of the scan: rusqlite's own conversion of such text panics.
    #[test]
    fn text_not_utf8_is_read_lossily() {
        let (_dir, path, conn) = database(
            "CREATE TABLE T (a INTEGER, b TEXT);
             INSERT INTO T VALUES (7, CAST(x'66ff6f' AS TEXT));",
        );
        let schema = Schema::probe(&conn, &tracex_ir::Location::Nowhere).unwrap();
        let t = schema.table("T").unwrap();
        let layout = Layout::of(&conn, &t, &["a", "b"], None).unwrap();
        let text = SqlValue::Text("f\u{fffd}o".into());
        let want = vec![SqlValue::Integer(1), SqlValue::Integer(7), text];
        assert_eq!(by_pages(&path, &t, &layout), vec![want]);
    }

    /// Tables the reader leaves to SQLite: a primary key, a default, a generated column,
    /// WITHOUT ROWID; and a WAL database.
    #[test]
    fn tables_it_does_not_take() {
        let (_dir, path, conn) = database(
            "CREATE TABLE P (id INTEGER PRIMARY KEY, v INTEGER);
             CREATE TABLE D (a INTEGER, b INTEGER DEFAULT 7);
             CREATE TABLE G (a INTEGER, b INTEGER GENERATED ALWAYS AS (a + 1));
             CREATE TABLE W (a INTEGER PRIMARY KEY, b TEXT) WITHOUT ROWID;
             CREATE TABLE OK (a INTEGER, b TEXT);",
        );
        let schema = Schema::probe(&conn, &tracex_ir::Location::Nowhere).unwrap();
        for name in ["P", "D", "G", "W"] {
            let t = schema.table(name).unwrap();
            assert!(Layout::of(&conn, &t, &["a"], None).is_none(), "{name}");
        }
        let ok = schema.table("OK").unwrap();
        let layout = Layout::of(&conn, &ok, &["a", "b"], None).unwrap();
        assert!(PageScan::open(&path, "OK", &layout).unwrap().is_some());
        conn.execute_batch("PRAGMA journal_mode = WAL; INSERT INTO OK VALUES (1, 'x');")
            .unwrap();
        assert!(PageScan::open(&path, "OK", &layout).unwrap().is_none());
    }

    /// A damaged file is an error naming the table, not a panic or an endless walk: every
    /// byte of a small database's pages changed in turn.
    #[test]
    fn damaged_pages_are_errors() {
        let (dir, path, conn) = small_database(60, |i| "y".repeat((i as usize * 53) % 1500));
        let schema = Schema::probe(&conn, &tracex_ir::Location::Nowhere).unwrap();
        let t = schema.table("T").unwrap();
        let layout = Layout::of(&conn, &t, &["a", "b"], None).unwrap();
        drop(conn);
        let good = std::fs::read(&path).unwrap();
        let bad = dir.path().join("bad.sqlite");
        let (mut errors, mut rows, mut count_errors) = (0, 0, 0);
        // the table's pages: after the header page and the schema's
        for i in (1024..good.len()).step_by(7) {
            for x in [0x00, 0xff] {
                let mut b = good.clone();
                b[i] = x;
                std::fs::write(&bad, &b).unwrap();
                let Some(mut scan) = PageScan::open(&bad, "T", &layout).unwrap() else {
                    continue;
                };
                // counting reads leaves by their headers: an error too, never a panic
                let counted = PageScan::open(&bad, "T", &layout).unwrap().unwrap().count();
                if let Err(e) = counted {
                    assert!(e.to_string().contains("damaged"), "{e}");
                    count_errors += 1;
                }
                loop {
                    match scan.next() {
                        Ok(Some(_)) => rows += 1,
                        Ok(None) => break,
                        Err(e) => {
                            assert!(e.to_string().contains("damaged"), "{e}");
                            errors += 1;
                            break;
                        }
                    }
                }
            }
        }
        assert!(errors > 50 && rows > 0, "{errors} errors, {rows} rows");
        assert!(count_errors > 10, "{count_errors} errors counting");
    }
}
