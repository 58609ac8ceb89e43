//! Records the importer can only use in an order of its own (flow points, begins and ends of
//! tracks whose file order is not time order), sorted at the end with bounded memory: records
//! are encoded as they come; once a run's worth of bytes is held, they are sorted and written to
//! a temporary file; at the end the runs and the records still held are merged. Sixteen runs of
//! one size are merged into one of the next, so that the runs open at the end stay few whatever
//! the number of records.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

/// A record, its place in the order and its bytes.
pub trait Record: Sized {
    /// The order; keys are unique (they end with the record's arrival number).
    type Key: Ord + Copy;
    fn key(&self) -> Self::Key;
    fn encode(&self, out: &mut Vec<u8>);
    /// What [`Record::encode`] wrote; an error where the bytes are damaged.
    fn decode(bytes: &[u8]) -> io::Result<Self>;
}

/// Bytes of records held in memory, encoded, before a sorted run of them goes to disk.
pub const RUN_BYTES: usize = 16 << 20;

/// Runs of one size merged into one of the next size once there are this many.
const FAN_IN: usize = 16;

/// The fixed-width little-endian fields at the head of a record's encoding, read in the order
/// they were written; `None` where the record is too short.
pub struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Fields(bytes)
    }

    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }

    pub fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|[b]| b)
    }

    pub fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }

    pub fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }

    pub fn i64(&mut self) -> Option<i64> {
        self.take().map(i64::from_le_bytes)
    }

    /// What follows the fields read.
    pub fn rest(&self) -> &'a [u8] {
        self.0
    }
}

/// A sorted run on disk and its size (0: written from memory; n + 1: merged from runs of n).
type Run = (u32, BufReader<File>);

/// A record held: its key, and where its encoding lies.
type Held<K> = (K, u32, u32);

/// Records to be sorted: the latest in memory, encoded, the earlier ones in sorted runs on disk.
/// Held records are encoded as they come (once, while in cache) and sorted as (key, place)
/// entries: sorting the records themselves moved slices of 150 bytes, and encoding them in key
/// order from where they lay missed the cache on every one.
pub struct Runs<R: Record> {
    /// The records held, encoded back to back, and where each lies, with its key.
    bytes: Vec<u8>,
    held: Vec<Held<R::Key>>,
    runs: Vec<Run>,
    /// Bytes held before they go to disk.
    run_bytes: usize,
    /// What the temporary files are for, for the error when one cannot be made.
    purpose: &'static str,
}

impl<R: Record> Runs<R> {
    /// Records that go to disk once `run_bytes` of their encodings are held.
    pub fn new(run_bytes: usize, purpose: &'static str) -> Self {
        Runs {
            bytes: Vec::new(),
            held: Vec::new(),
            runs: Vec::new(),
            run_bytes: run_bytes.max(1),
            purpose,
        }
    }

    pub fn push(&mut self, r: &R) -> io::Result<()> {
        let start = self.bytes.len();
        r.encode(&mut self.bytes);
        let (Ok(at), Ok(len)) = (
            u32::try_from(start),
            u32::try_from(self.bytes.len() - start),
        ) else {
            return Err(io::Error::other(
                "a record of more than 4 GiB cannot be sorted",
            ));
        };
        self.held.push((r.key(), at, len));
        if self.bytes.len() >= self.run_bytes {
            self.spill()?;
        }
        Ok(())
    }

    /// Writes the records held to a temporary file, sorted; merges the last [`FAN_IN`] runs
    /// into one while they are of one size.
    fn spill(&mut self) -> io::Result<()> {
        self.held.sort_unstable_by_key(|e| e.0);
        let bytes = &self.bytes;
        let run = write_run(
            self.purpose,
            self.held.iter().map(|e| Ok(encoded(bytes, e))),
        )?;
        self.held.clear();
        self.bytes.clear();
        self.runs.push((0, run));
        while let Some(size) = self.full_size() {
            let group = self.runs.split_off(self.runs.len() - FAN_IN);
            let mut merged = Sorted::<R>::new(group.into_iter().map(|(_, r)| r).collect())?;
            let mut one = Vec::new();
            let records = std::iter::from_fn(|| {
                let r = merged.next().transpose()?;
                Some(r.map(|r| {
                    one.clear();
                    r.encode(&mut one);
                    one.clone()
                }))
            });
            let run = write_run(self.purpose, records)?;
            self.runs.push((size + 1, run));
        }
        Ok(())
    }

    /// The size of the last [`FAN_IN`] runs, when they are all of it.
    fn full_size(&self) -> Option<u32> {
        let last = self.runs.get(self.runs.len().checked_sub(FAN_IN)?..)?;
        let size = last[0].0;
        last.iter().all(|r| r.0 == size).then_some(size)
    }

    /// Every record, in order.
    pub fn sorted(mut self) -> io::Result<Sorted<R>> {
        self.held.sort_unstable_by_key(|e| e.0);
        let mut s = Sorted::new(self.runs.into_iter().map(|(_, r)| r).collect())?;
        s.memory = self.held.into_iter().peekable();
        s.memory_bytes = self.bytes;
        Ok(s)
    }

    /// The sizes of the runs on disk, for tests.
    #[cfg(test)]
    pub fn run_sizes(&self) -> Vec<u32> {
        self.runs.iter().map(|r| r.0).collect()
    }
}

/// The encoding of the held record `e`.
fn encoded<'a, K>(bytes: &'a [u8], e: &Held<K>) -> &'a [u8] {
    &bytes[e.1 as usize..e.1 as usize + e.2 as usize]
}

/// A new temporary file holding the encoded `records` (each its length, then its bytes),
/// rewound.
fn write_run<B: AsRef<[u8]>>(
    purpose: &str,
    records: impl Iterator<Item = io::Result<B>>,
) -> io::Result<BufReader<File>> {
    let file = tempfile::tempfile().map_err(|e| tracex_ir::io::temp_file_error(e, purpose))?;
    let mut w = BufWriter::with_capacity(1 << 16, file);
    for r in records {
        let r = r?;
        let bytes = r.as_ref();
        let len = u32::try_from(bytes.len())
            .map_err(|_| io::Error::other("a record of more than 4 GiB cannot be sorted"))?;
        w.write_all(&len.to_le_bytes())?;
        w.write_all(bytes)?;
    }
    let mut file = w.into_inner().map_err(|e| e.into_error())?;
    file.seek(SeekFrom::Start(0))?;
    Ok(BufReader::with_capacity(1 << 16, file))
}

/// Sorted runs and the sorted records held in memory, merged.
pub struct Sorted<R: Record> {
    runs: Vec<BufReader<File>>,
    /// The next record of each run.
    next: Vec<Option<R>>,
    /// The runs by their next record's key.
    heads: BinaryHeap<Reverse<(R::Key, usize)>>,
    /// The records held in memory, in order, and their encodings.
    memory: std::iter::Peekable<std::vec::IntoIter<Held<R::Key>>>,
    memory_bytes: Vec<u8>,
    bytes: Vec<u8>,
}

impl<R: Record> Sorted<R> {
    fn new(runs: Vec<BufReader<File>>) -> io::Result<Self> {
        let mut s = Sorted::<R> {
            next: Vec::with_capacity(runs.len()),
            heads: BinaryHeap::with_capacity(runs.len()),
            runs,
            memory: Vec::new().into_iter().peekable(),
            memory_bytes: Vec::new(),
            bytes: Vec::new(),
        };
        for i in 0..s.runs.len() {
            let r = s.read(i)?;
            if let Some(r) = &r {
                s.heads.push(Reverse((r.key(), i)));
            }
            s.next.push(r);
        }
        Ok(s)
    }

    /// The next record of run `i`, or `None` at its end.
    fn read(&mut self, i: usize) -> io::Result<Option<R>> {
        let mut len = [0u8; 4];
        match self.runs[i].read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        self.bytes.resize(u32::from_le_bytes(len) as usize, 0);
        self.runs[i].read_exact(&mut self.bytes)?;
        R::decode(&self.bytes).map(Some)
    }

    pub fn next(&mut self) -> io::Result<Option<R>> {
        let from_run = match (self.heads.peek(), self.memory.peek()) {
            (Some(Reverse((key, _))), Some((k, ..))) => key < k,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return Ok(None),
        };
        if !from_run {
            let e = self.memory.next().expect("a record in memory");
            return R::decode(encoded(&self.memory_bytes, &e)).map(Some);
        }
        let Reverse((_, i)) = self.heads.pop().expect("a head");
        let record = self.next[i].take();
        self.next[i] = self.read(i)?;
        if let Some(r) = &self.next[i] {
            self.heads.push(Reverse((r.key(), i)));
        }
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of some bytes, ordered by (value, arrival).
    #[derive(Debug, PartialEq)]
    struct Word(u32, u64, Vec<u8>);

    impl Record for Word {
        type Key = (u32, u64);
        fn key(&self) -> (u32, u64) {
            (self.0, self.1)
        }
        fn encode(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(&self.0.to_le_bytes());
            out.extend_from_slice(&self.1.to_le_bytes());
            out.extend_from_slice(&self.2);
        }
        fn decode(b: &[u8]) -> io::Result<Word> {
            let bad = || io::Error::other("short");
            Ok(Word(
                u32::from_le_bytes(b.get(..4).ok_or_else(bad)?.try_into().unwrap()),
                u64::from_le_bytes(b.get(4..12).ok_or_else(bad)?.try_into().unwrap()),
                b[12..].to_vec(),
            ))
        }
    }

    #[test]
    fn records_come_out_in_order_from_any_run_size() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let words: Vec<(u32, usize)> = (0..5_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((x % 700) as u32, (x >> 20) as usize % 9)
            })
            .collect();
        let mut want: Vec<(u32, u64)> = (words.iter().enumerate())
            .map(|(i, &(v, _))| (v, i as u64))
            .collect();
        want.sort_unstable();
        for run in [1, 7, 999, 4_999, 5_000, 1 << 20] {
            let mut runs = Runs::new(run, "to test");
            for (i, &(v, len)) in words.iter().enumerate() {
                runs.push(&Word(v, i as u64, vec![v as u8; len])).unwrap();
            }
            if run == 1 {
                // 5000 = 4096 + 3 × 256 + 8 × 16 + 8: the runs left open, by size
                let sizes = [3].iter().chain(&[2; 3]).chain(&[1; 8]).chain(&[0; 8]);
                assert_eq!(runs.run_sizes(), sizes.copied().collect::<Vec<u32>>());
            }
            let mut sorted = runs.sorted().unwrap();
            let mut got = Vec::new();
            while let Some(w) = sorted.next().unwrap() {
                assert_eq!(
                    w.2,
                    vec![w.0 as u8; words[w.1 as usize].1],
                    "bytes of {w:?}"
                );
                got.push(w.key());
            }
            assert_eq!(got, want, "runs of {run}");
        }
    }

    #[test]
    fn a_damaged_record_is_an_error() {
        let mut runs = Runs::new(1, "to test");
        runs.push(&Word(1, 0, vec![])).unwrap();
        let mut file = runs.runs.pop().unwrap().1.into_inner();
        file.set_len(0).unwrap();
        file.write_all(&[3, 0, 0, 0, 1, 2, 3]).unwrap();
        file.seek(SeekFrom::Start(0)).unwrap();
        runs.runs.push((0, BufReader::new(file)));
        assert!(runs.sorted().is_err());
    }
}
