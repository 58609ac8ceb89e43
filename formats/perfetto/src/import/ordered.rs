//! Begins and ends matched in time order at the end of the import, for tracks whose file order
//! is not time order: tracks several sequences write to, legacy async tracks, and atrace
//! markers (each CPU's ftrace bundle is in time order, the file is not).

use rustc_hash::FxHashMap;
use tracex_ir::{Args, Slice, StrId, TrackId};

/// The end of a slice, kept until it is matched with its begin.
pub struct End {
    pub ts: i64,
    /// An end that names its slice closes the innermost open one with that name and category.
    pub name: Option<StrId>,
    pub cat: Option<StrId>,
    pub args: Args,
    pub thread_time: Option<i64>,
    pub thread_dur: Option<i64>,
    /// Byte offset of its packet.
    pub at: u64,
}

impl End {
    /// The end of the innermost open slice at `ts`, with nothing more to say.
    pub fn plain(ts: i64, at: u64) -> End {
        End {
            ts,
            name: None,
            cat: None,
            args: Args::new(),
            thread_time: None,
            thread_dur: None,
            at,
        }
    }
}

pub enum Rec {
    Begin(Slice),
    End(End),
}

/// Begins and ends of one track: (time, file order, what).
pub type Kept = Vec<(i64, u64, Rec)>;

#[derive(Default)]
pub struct TimeOrdered {
    tracks: FxHashMap<TrackId, Kept>,
    order: u64,
}

impl TimeOrdered {
    /// A begin or end on `track` at `ts`, matched in time order at the end.
    pub fn keep(&mut self, track: TrackId, ts: i64, r: Rec) {
        self.order += 1;
        self.tracks
            .entry(track)
            .or_default()
            .push((ts, self.order, r));
    }

    /// Every track's begins and ends, tracks in id order, each in time order (file order
    /// among equal times).
    pub fn drain(&mut self) -> Vec<(TrackId, Kept)> {
        let mut out: Vec<(TrackId, Kept)> = self.tracks.drain().collect();
        out.sort_by_key(|(t, _)| *t);
        for (_, recs) in &mut out {
            // sorted by key, each record moved once: a begin holds a whole slice
            let mut keys: Vec<(i64, u64, usize)> = (recs.iter().enumerate())
                .map(|(i, (ts, order, _))| (*ts, *order, i))
                .collect();
            if keys.is_sorted() {
                continue;
            }
            keys.sort_unstable();
            let mut slots: Vec<Option<(i64, u64, Rec)>> = recs.drain(..).map(Some).collect();
            recs.extend(
                keys.iter()
                    .map(|k| slots[k.2].take().expect("each record once")),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_out_by_track_in_time_then_file_order() {
        let mut o = TimeOrdered::default();
        let (a, b) = (TrackId(1), TrackId(0));
        o.keep(a, 30, Rec::End(End::plain(30, 0)));
        o.keep(a, 10, Rec::Begin(Slice::new(a, 10, 0, StrId::EMPTY)));
        o.keep(b, 20, Rec::End(End::plain(20, 0)));
        o.keep(a, 10, Rec::End(End::plain(10, 0)));
        let got: Vec<(TrackId, Vec<(i64, u64)>)> = o
            .drain()
            .iter()
            .map(|(t, r)| (*t, r.iter().map(|(ts, n, _)| (*ts, *n)).collect()))
            .collect();
        // tracks in id order; equal times in file order
        assert_eq!(
            got,
            vec![(b, vec![(20, 3)]), (a, vec![(10, 2), (10, 4), (30, 1)])]
        );
        assert!(o.drain().is_empty());
    }
}
