//! The reading end of a read-ahead thread: an importer reads and parses its input on a thread
//! of its own, and hands what it read to the importing thread in batches through a bounded
//! channel; spent batches come back to be filled again, so memory stays bounded and warm.

use std::sync::mpsc::{Receiver, SyncSender};

/// Hands batches over as they fill. The first batches are small, so that the importing thread
/// starts at once; each next one is twice as large, up to a limit.
pub struct Handoff<M, B> {
    tx: SyncSender<M>,
    spent: Receiver<B>,
    /// Bytes at which the current batch is full.
    full: usize,
    most: usize,
}

impl<M, B: Default> Handoff<M, B> {
    /// Batches go out on `tx` and come back on `spent`; the first is full at `first` bytes, the
    /// largest at `most`.
    pub fn new(tx: SyncSender<M>, spent: Receiver<B>, first: usize, most: usize) -> Self {
        Handoff {
            tx,
            spent,
            full: first,
            most,
        }
    }

    /// Sends `batch` (as `wrap` makes it a message) once it holds `bytes` or more, leaving an
    /// empty batch in its place: a spent one when one came back. False when the importing
    /// thread hung up, which means reading stops.
    pub fn offer(&mut self, batch: &mut B, bytes: usize, wrap: impl FnOnce(B) -> M) -> bool {
        if bytes < self.full {
            return true;
        }
        self.full = (self.full * 2).min(self.most);
        let next = self.spent.try_recv().unwrap_or_default();
        self.tx.send(wrap(std::mem::replace(batch, next))).is_ok()
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
        // a spent batch came back in place of the last one sent
        assert!(batch.capacity() >= 100);
        h.last(batch);
        assert_eq!(rx.try_recv().unwrap(), [38, 39]);
        drop(rx);
        let mut full = vec![0; 8];
        assert!(!h.offer(&mut full, 8, |b| b), "the receiver hung up");
    }
}
