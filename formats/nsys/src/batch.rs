//! Rows as a reader thread hands them to the merge: cells of 16 bytes, with the bytes of text
//! and blobs beside them, where SQLite's owned value takes 32. A kernel row has about thirty
//! cells, and every batch is written on a reader's core and read on the merge's: at 32 bytes
//! a cell, that was a gigabyte crossing between the cores for 1M kernels. Spent batches are
//! emptied without a look at their cells (nothing in them owns memory).

#[cfg(test)]
use rusqlite::types::Value as SqlValue;
use rusqlite::types::ValueRef;

/// A batch's texts and blobs: its bytes, and the span of each text or blob cell in them.
pub type Texts<'a> = (&'a [u8], &'a [(usize, usize)]);

/// One cell; a text or a blob is the range of [`Batch::bytes`] at its index in
/// [`Batch::spans`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Packed {
    Null,
    Int(i64),
    Real(f64),
    Text(u32),
    Blob(u32),
}

impl Packed {
    /// The cell as SQLite's borrowed value; `texts`: its batch's.
    #[inline]
    pub fn value_ref(self, (bytes, spans): Texts<'_>) -> ValueRef<'_> {
        let range = |span: u32| {
            let (at, end) = spans[span as usize];
            &bytes[at..end]
        };
        match self {
            Packed::Null => ValueRef::Null,
            Packed::Int(v) => ValueRef::Integer(v),
            Packed::Real(v) => ValueRef::Real(v),
            Packed::Text(span) => ValueRef::Text(range(span)),
            Packed::Blob(span) => ValueRef::Blob(range(span)),
        }
    }
}

/// Bytes of text and blobs a batch holds before it is handed on, whatever its rows: the
/// memory of the batches in flight stays bounded by what one row holds.
pub const MAX_BYTES: usize = 16 << 20;

/// Rows of `columns` cells each, flat.
#[derive(Default)]
pub struct Batch {
    pub cells: Vec<Packed>,
    pub bytes: Vec<u8>,
    /// The ranges of `bytes` that the text and blob cells are.
    pub spans: Vec<(usize, usize)>,
}

impl Batch {
    pub fn with_capacity(cells: usize) -> Batch {
        Batch {
            cells: Vec::with_capacity(cells),
            bytes: Vec::new(),
            spans: Vec::new(),
        }
    }

    pub fn clear(&mut self) {
        self.cells.clear();
        self.bytes.clear();
        self.spans.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Keeps `bytes`; the index of their span (a batch has fewer spans than cells, which
    /// number far below `u32::MAX`).
    fn span_of(&mut self, bytes: &[u8]) -> u32 {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        self.spans.push((at, self.bytes.len()));
        (self.spans.len() - 1) as u32
    }

    /// Appends `cells`, whose texts are in `texts` (another batch's).
    #[inline]
    pub fn push_cells(&mut self, cells: &[Packed], texts: Texts) {
        for &c in cells {
            match c {
                Packed::Text(_) | Packed::Blob(_) => self.push_ref(c.value_ref(texts)),
                _ => self.cells.push(c),
            }
        }
    }

    /// Drops the first `n` cells (whole rows); the texts of the cells left stay, those of the
    /// dropped ones go.
    pub fn drain_front(&mut self, n: usize) {
        self.cells.drain(..n);
        if self.spans.is_empty() {
            return;
        }
        let (bytes, spans) = (
            std::mem::take(&mut self.bytes),
            std::mem::take(&mut self.spans),
        );
        for i in 0..self.cells.len() {
            if let Packed::Text(s) | Packed::Blob(s) = self.cells[i] {
                let (at, end) = spans[s as usize];
                let span = self.span_of(&bytes[at..end]);
                if let Packed::Text(s) | Packed::Blob(s) = &mut self.cells[i] {
                    *s = span;
                }
            }
        }
    }

    /// The bytes and spans the cells' texts and blobs refer to.
    #[inline]
    pub fn texts(&self) -> Texts<'_> {
        (&self.bytes, &self.spans)
    }

    #[inline]
    pub fn push_ref(&mut self, v: ValueRef) {
        let cell = match v {
            ValueRef::Null => Packed::Null,
            ValueRef::Integer(i) => Packed::Int(i),
            ValueRef::Real(f) => Packed::Real(f),
            ValueRef::Text(t) => Packed::Text(self.span_of(t)),
            ValueRef::Blob(b) => Packed::Blob(self.span_of(b)),
        };
        self.cells.push(cell);
    }

    #[inline]
    pub fn push_value(&mut self, v: &rusqlite::types::Value) {
        self.push_ref(ValueRef::from(v));
    }

    /// The rows of `columns` cells, as owned values (the tests' view).
    #[cfg(test)]
    pub fn to_rows(&self, columns: usize) -> Vec<Vec<SqlValue>> {
        (self.cells.chunks(columns))
            .map(|row| {
                row.iter()
                    .map(|c| match c.value_ref(self.texts()) {
                        ValueRef::Null => SqlValue::Null,
                        ValueRef::Integer(v) => SqlValue::Integer(v),
                        ValueRef::Real(v) => SqlValue::Real(v),
                        ValueRef::Text(t) => SqlValue::Text(String::from_utf8_lossy(t).into()),
                        ValueRef::Blob(b) => SqlValue::Blob(b.to_vec()),
                    })
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of value comes back as it went in; text that is not UTF-8 comes back
    /// lossily, as `db::owned` reads it; a cleared batch is empty, bytes included.
    #[test]
    fn values_come_back_as_they_went_in() {
        let values = [
            SqlValue::Null,
            SqlValue::Integer(-7),
            SqlValue::Real(2.5),
            SqlValue::Text("kernel ✓".into()),
            SqlValue::Blob(vec![0, 1, 255]),
            SqlValue::Text(String::new()),
            SqlValue::Integer(i64::MAX),
        ];
        let mut b = Batch::with_capacity(8);
        for v in &values {
            b.push_value(v);
        }
        b.push_ref(ValueRef::Text(b"a\xffb"));
        let out = b.to_rows(values.len() + 1).remove(0);
        assert_eq!(&out[..values.len()], &values);
        assert_eq!(out[values.len()], SqlValue::Text("a\u{fffd}b".into()));
        assert_eq!(std::mem::size_of::<Packed>(), 16);
        let mut c = Batch::default();
        c.push_cells(&b.cells, b.texts());
        assert_eq!(c.to_rows(values.len() + 1), b.to_rows(values.len() + 1));
        b.clear();
        assert!(b.is_empty() && b.bytes.is_empty() && b.spans.is_empty());
    }

    /// Dropping rows at the front keeps the texts of the rows left, and only theirs.
    #[test]
    fn rows_dropped_at_the_front_take_their_texts() {
        let mut b = Batch::default();
        for i in 0..4 {
            b.push_value(&SqlValue::Integer(i));
            b.push_value(&SqlValue::Text(format!("row {i}")));
        }
        let rows = b.to_rows(2);
        b.drain_front(4);
        assert_eq!(b.to_rows(2), rows[2..]);
        assert_eq!(b.spans.len(), 2);
        assert_eq!(b.bytes, b"row 2row 3");
        let mut ints = Batch::default();
        (0..6).for_each(|i| ints.push_value(&SqlValue::Integer(i)));
        ints.drain_front(2);
        assert_eq!(
            ints.to_rows(2),
            vec![
                vec![SqlValue::Integer(2), SqlValue::Integer(3)],
                vec![SqlValue::Integer(4), SqlValue::Integer(5)]
            ]
        );
    }
}
