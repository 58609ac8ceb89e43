//! The reading end of a read-ahead thread: an importer reads and parses its input on a thread
//! of its own, and hands what it read to the importing thread in batches through a bounded
//! channel; spent batches come back to be filled again, so memory stays bounded and warm.

use std::io;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};

use crate::apart::{self, Held};

/// A batch of what a reader thread read: emptied by the importing thread once handed on, and
/// sent back to be filled again.
pub trait Batch: Default + Send {
    fn clear(&mut self);

    /// Makes room in this empty batch for what `like`, a batch that held `bytes`, holds, scaled
    /// to `target` bytes (and an eighth more, for the item that fills it): a batch grown by
    /// doubling copied its lists into fresh pages at each step, most of what a reader thread
    /// spent on the first batches of an input. Room never written costs only address space.
    fn reserve_like(&mut self, _like: &Self, _bytes: usize, _target: usize) {}
}

/// Room for `scaled(len)` items in the empty list `v`: a fresh allocation where it has less,
/// as growing one copies its whole old capacity.
pub fn room<T>(v: &mut Vec<T>, len: usize, (bytes, target): (usize, usize)) {
    let n = scaled(len, bytes, target);
    if v.capacity() < n {
        *v = Vec::with_capacity(n);
    }
}

/// [`room`] for text.
pub fn room_text(s: &mut String, len: usize, (bytes, target): (usize, usize)) {
    let n = scaled(len, bytes, target);
    if s.capacity() < n {
        *s = String::with_capacity(n);
    }
}

/// `len` items of a batch of `bytes`, in one of `target` bytes, with an eighth more.
fn scaled(len: usize, bytes: usize, target: usize) -> usize {
    let n = (len as u128 * target as u128 / bytes.max(1) as u128) as usize;
    n.saturating_add(n / 8)
}

/// What a reader thread sends: batches in input order, then, when a read failed, the error.
pub enum Msg<B> {
    Batch(B),
    Failed(io::Error),
}

/// Where `part`, a slice of `within` (or any empty string), lies in it: a reader thread keeps
/// the parts of what it parsed as ranges of its batch's text, as their slices cannot cross to
/// the importing thread with the batch.
pub fn span(within: &str, part: &str) -> std::ops::Range<usize> {
    if part.is_empty() {
        return 0..0;
    }
    let from = part.as_ptr() as usize - within.as_ptr() as usize;
    debug_assert!(from + part.len() <= within.len(), "not a slice of `within`");
    from..from + part.len()
}

/// Batches a reader thread may run ahead of the importing thread.
const AHEAD: usize = 4;

/// The text of a reader's first batch: small, so that the importing thread starts at once; each
/// next batch doubles up to [`BATCH_BYTES`].
pub const FIRST_BATCH: usize = 16 << 10;

/// The text of a reader's full batch (the Chrome, folded and CUPTI text readers'): large enough
/// that the channel costs nothing per event (a few hundred events a batch), small enough that
/// the batches in flight, which hold about twice their text again in what was read of it, are
/// a megabyte and not four: the first touch of a page costs about 2 µs on these machines, and
/// 256 KiB batches had the Chrome reader fault in 900 pages of the 20k-launch GPU merge's
/// input, on the thread that bounds its import.
pub const BATCH_BYTES: usize = 64 << 10;

/// Runs `read` on a thread of its own, named `name`, and hands each batch it fills (through a
/// [`Handoff`] of first batch `first` and largest `most` bytes) to `each` on this thread, in
/// order. A read error comes after every batch before it; an error of `each` stops the
/// reading (the reader's next send fails).
pub fn read_ahead<B: Batch, E: From<io::Error>>(
    name: &str,
    (first, most): (usize, usize),
    read: impl FnOnce(&mut Handoff<Msg<B>, B>) + Send,
    mut each: impl FnMut(&mut B) -> Result<(), E>,
) -> Result<(), E> {
    let (tx, rx) = sync_channel(AHEAD);
    let (spent_tx, spent_rx) = channel();
    std::thread::scope(|scope| {
        let builder = std::thread::Builder::new().name(name.into());
        let (_, mut held) = apart::spawn_scoped(scope, builder, move |held| {
            read(&mut Handoff::new(tx, spent_rx, first, most).held(held))
        })?;
        // `rx` is dropped when this returns, so a reader still running stops at its next send
        let rx = rx;
        // the reader hangs up after its last batch (or by panicking, which the scope passes on)
        while let Ok(msg) = rx.recv() {
            held.check();
            match msg {
                Msg::Batch(mut batch) => {
                    each(&mut batch)?;
                    batch.clear();
                    let _ = spent_tx.send(batch);
                }
                Msg::Failed(e) => return Err(e.into()),
            }
        }
        Ok(())
    })
}

/// Hands batches over as they fill. The first batches are small, so that the importing thread
/// starts at once; each next one is twice as large, up to a limit.
pub struct Handoff<M, B> {
    tx: SyncSender<M>,
    spent: Receiver<B>,
    /// Spent batches back from the importing thread, to be filled again.
    pool: Vec<B>,
    /// Batches sent, and those back.
    sent: u64,
    back: u64,
    /// Bytes at which the current batch is full.
    full: usize,
    most: usize,
    /// The reader thread kept off the importing thread's CPUs for a while.
    held: Option<Held>,
}

impl<M, B: Batch> Handoff<M, B> {
    /// Batches go out on `tx` and come back on `spent`; the first is full at `first` bytes, the
    /// largest at `most`.
    pub fn new(tx: SyncSender<M>, spent: Receiver<B>, first: usize, most: usize) -> Self {
        Handoff {
            tx,
            spent,
            pool: Vec::new(),
            sent: 0,
            back: 0,
            full: first,
            most,
            held: None,
        }
    }

    /// Gives the reader's hold on its CPUs ([`apart`](crate::apart)) to this hand-off, which
    /// checks it batch by batch.
    pub fn held(mut self, held: Held) -> Self {
        self.held = Some(held);
        self
    }

    /// Sends `batch` (as `wrap` makes it a message) once it holds `bytes` or more, leaving an
    /// empty batch in its place: a spent one when one came back. False when the importing
    /// thread hung up, which means reading stops.
    pub fn offer(&mut self, batch: &mut B, bytes: usize, wrap: impl FnOnce(B) -> M) -> bool {
        if bytes < self.full {
            return true;
        }
        self.full = (self.full * 2).min(self.most);
        if let Some(held) = &mut self.held {
            held.check();
        }
        self.collect();
        let mut next = self.pool.pop().unwrap_or_default();
        next.reserve_like(batch, bytes, self.full);
        self.sent += 1;
        self.tx.send(wrap(std::mem::replace(batch, next))).is_ok()
    }

    /// Whether the importing thread is behind: the queue to it is full, or but one batch short.
    /// A reader whose batches leave part of the parsing to the importing thread does it itself
    /// only then, so that the work settles where a core is free: the CUPTI text reader that
    /// did it all was the bottleneck of a GPU merge while the importing thread waited for it
    /// half the time, and the importing thread that did it all became the bottleneck in turn.
    pub fn behind(&mut self) -> bool {
        self.collect();
        // the batches sent that are not back: those queued, and the one in hand
        self.sent - self.back >= AHEAD as u64
    }

    /// Takes the spent batches that came back.
    fn collect(&mut self) {
        while let Ok(b) = self.spent.try_recv() {
            self.back += 1;
            self.pool.push(b);
        }
    }

    /// Sends a last message (the last batch, how reading ended); the importing thread may have
    /// hung up already.
    pub fn last(&self, message: M) {
        let _ = self.tx.send(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{channel, sync_channel};

    impl Batch for Vec<u32> {
        fn clear(&mut self) {
            Vec::clear(self)
        }
        fn reserve_like(&mut self, like: &Self, bytes: usize, target: usize) {
            room(self, like.len(), (bytes, target));
        }
    }

    #[test]
    fn spans_are_where_the_parts_lie() {
        let text = "key value, \"name\"";
        let (key, rest) = text.split_at(3);
        assert_eq!(span(text, key), 0..3);
        assert_eq!(span(text, rest.trim_start()), 4..text.len());
        assert_eq!(&text[span(text, &rest[1..6])], "value");
        // an empty part may be a literal anywhere: its range is empty
        assert!(span(text, "").is_empty());
        assert!(span(text, &text[5..5]).is_empty());
    }

    #[test]
    fn a_fresh_batch_has_room_for_what_the_last_one_held_scaled() {
        let (tx, rx) = sync_channel(8);
        let (_spent_tx, spent_rx) = channel();
        let mut h = Handoff::new(tx, spent_rx, 4, 64);
        let mut batch: Vec<u32> = vec![0; 4];
        assert!(h.offer(&mut batch, 4, |b| b));
        assert_eq!(rx.try_recv().unwrap().len(), 4);
        // the next one fills at 8 bytes: room for 8 items, and an eighth more
        assert!(
            batch.is_empty() && batch.capacity() >= 9,
            "{}",
            batch.capacity()
        );
        assert_eq!(scaled(1000, 250, 500), 2250);
        assert_eq!(scaled(3, 0, 10), 33, "an empty batch's bytes count as one");
    }

    #[test]
    fn batches_go_out_when_full_growing_and_come_back_for_reuse() {
        let (tx, rx) = sync_channel(8);
        let (spent_tx, spent_rx) = channel();
        let mut h = Handoff::new(tx, spent_rx, 2, 8);
        let mut batch: Vec<u32> = Vec::new();
        let mut sent = Vec::new();
        for i in 0..40 {
            batch.push(i);
            let n = batch.len();
            assert!(h.offer(&mut batch, n, |b| b));
            while let Ok(b) = rx.try_recv() {
                sent.push(b.len());
                spent_tx.send(Vec::with_capacity(100)).unwrap();
            }
        }
        assert_eq!(sent, [2, 4, 8, 8, 8, 8]);
        // every batch sent came back: the importing thread is not behind
        assert!(!h.behind());
        let mut more = vec![0; 8];
        for _ in 0..AHEAD - 1 {
            assert!(h.offer(&mut more, 8, |b| b));
            more.resize(8, 0);
            assert!(!h.behind());
        }
        assert!(h.offer(&mut more, 8, |b| b));
        assert!(h.behind(), "{AHEAD} batches sent and none back");
        rx.try_recv().unwrap();
        spent_tx.send(Vec::new()).unwrap();
        assert!(!h.behind(), "one came back");
        while rx.try_recv().is_ok() {}
        // a spent batch came back in place of the last one sent
        assert!(batch.capacity() >= 100);
        h.last(batch);
        assert_eq!(rx.try_recv().unwrap(), [38, 39]);
        drop(rx);
        let mut full = vec![0; 8];
        assert!(!h.offer(&mut full, 8, |b| b), "the receiver hung up");
    }
}
