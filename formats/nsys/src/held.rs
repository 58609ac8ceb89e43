//! Rows read ahead of the order a schedule wants them in ([`crate::order::NearlySorted`]):
//! the reader of a table stored close to time order and the launch join both hold rows back
//! here until their turn.

use tracex_ir::Result;

use crate::batch::{Batch, Packed};
use crate::db::Row;
use crate::scan::ScanRows;

/// Rows read ahead of the schedule, in storage order: their rowids and whether they were
/// handed on, and their cells (packed, [`crate::batch`]), in flat vectors from `head` on. Rows
/// are decoded straight into the cells, and those handed on at the front are dropped by moving
/// `head`, the vectors being cut only once their dropped part is the larger (a `VecDeque` of
/// cells filled through an iterator and drained a row at a time was a quarter of the readers'
/// samples, `--unsorted`).
pub struct Held {
    rows: Vec<(i64, bool)>,
    cells: Batch,
    head: usize,
    columns: usize,
    /// The rowid of the last row read, and whether the rows have ended.
    last: i64,
    ended: bool,
}

impl Held {
    pub fn new(depth: usize, columns: usize) -> Held {
        Held {
            rows: Vec::with_capacity(2 * (depth + 1)),
            cells: Batch::with_capacity(2 * (depth + 1) * columns),
            head: 0,
            columns,
            last: i64::MIN,
            ended: false,
        }
    }

    /// Reads the rows of `rows` up to the first one past `rowid` (so every row of `rowid`: a
    /// join may give several), or to their end.
    pub fn read_past(&mut self, rows: &mut ScanRows, rowid: i64) -> Result<()> {
        while !self.ended && self.last <= rowid {
            match self.read(rows)? {
                Some(r) => self.last = r,
                None => self.ended = true,
            }
        }
        Ok(())
    }

    /// The rowid of the last row read.
    pub fn last_read(&self) -> i64 {
        self.last
    }

    /// Reads the next row of `rows` (its rowid), or `None` at their end.
    fn read(&mut self, rows: &mut ScanRows) -> Result<Option<i64>> {
        let at = self.cells.cells.len();
        if !rows.next_packed(&mut self.cells)? {
            return Ok(None);
        }
        // cell 0 is the rowid
        let rowid = match self.cells.cells[at] {
            Packed::Int(r) => r,
            _ => 0,
        };
        self.rows.push((rowid, false));
        Ok(Some(rowid))
    }

    /// The first held row whose rowid is not below `rowid`.
    pub fn first_at_or_after(&self, rowid: i64) -> usize {
        let held = &self.rows[self.head..];
        // Rowids are mostly consecutive (exports delete no rows), so the row is mostly as far
        // from the first held as its rowid is from that row's: a binary search over thousands
        // of held rows was a third of the reorder's samples (a 1M-kernel export not in order).
        if let Some(&(first, _)) = held.first() {
            if let Some(d) = rowid
                .checked_sub(first)
                .and_then(|d| usize::try_from(d).ok())
            {
                let first_of_rowid = |d: usize| d == 0 || held[d - 1].0 < rowid;
                if held.get(d).is_some_and(|&(r, _)| r == rowid) && first_of_rowid(d) {
                    return self.head + d;
                }
            }
        }
        self.head + held.partition_point(|&(r, _)| r < rowid)
    }

    /// The place of the (first) held row of `rowid`, if one is held.
    pub fn find(&self, rowid: i64) -> Option<usize> {
        let i = self.first_at_or_after(rowid);
        (self.rows.get(i)?.0 == rowid).then_some(i)
    }

    /// The row at place `i`.
    pub fn row(&self, i: usize) -> Row<'_> {
        Row {
            cells: &self.cells.cells[i * self.columns..(i + 1) * self.columns],
            texts: self.cells.texts(),
        }
    }

    /// Row `i`, marked as handed on, when it is a row of `rowid`.
    pub fn take_if(&mut self, i: usize, rowid: i64) -> Option<Row<'_>> {
        let row = self.rows.get_mut(i).filter(|r| r.0 == rowid)?;
        row.1 = true;
        Some(self.row(i))
    }

    /// Drops the rows handed on at the front (places of rows still held may change).
    pub fn drop_taken(&mut self) {
        while self.rows.get(self.head).is_some_and(|&(_, taken)| taken) {
            self.head += 1;
        }
        if self.head > 0 && self.head >= self.rows.len() - self.head {
            self.rows.drain(..self.head);
            self.cells.drain_front(self.head * self.columns);
            self.head = 0;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.head == self.rows.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guess from consecutive rowids gives what a binary search gives: with gaps,
    /// repeated rowids (a join gives several rows of one), rowids below and past those held,
    /// and rows dropped at the front.
    #[test]
    fn the_first_row_at_or_after_a_rowid_is_that_of_a_binary_search() {
        let rowids = [3, 4, 5, 5, 5, 6, 9, 10, 10, 11, 20, 21, 22];
        for head in 0..rowids.len() {
            let mut h = Held::new(rowids.len(), 1);
            h.rows = rowids.iter().map(|&r| (r, false)).collect();
            h.head = head;
            for rowid in 0..25 {
                let want = head + rowids[head..].partition_point(|&r| r < rowid);
                assert_eq!(
                    h.first_at_or_after(rowid),
                    want,
                    "rowid {rowid}, head {head}"
                );
            }
        }
        let empty = Held::new(0, 1);
        assert_eq!(empty.first_at_or_after(7), 0);
    }
}
