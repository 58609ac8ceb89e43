//! Begins and ends matched in time order at the end of the import, for tracks whose file order
//! is not time order: tracks several sequences write to, legacy async tracks, and atrace
//! markers (each CPU's ftrace bundle is in time order, the file is not). Beyond [`RUN_BYTES`] bytes
//! of them they wait in sorted runs on disk ([`Runs`]), so memory stays bounded whatever their
//! number.

use std::io;

use tracex_ir::codec::{self, Decoder};
use tracex_ir::{Args, Slice, StrId, TrackId};

use super::runs::{Fields, Record, Runs, Sorted, RUN_BYTES};

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

impl Rec {
    /// When the begin or end is: the time it is kept and sorted at.
    fn ts(&self) -> i64 {
        match self {
            Rec::Begin(s) => s.ts,
            Rec::End(e) => e.ts,
        }
    }
}

/// A begin or end kept, on its track at its time ([`Rec::ts`]), with its file order.
pub struct Kept {
    pub track: TrackId,
    order: u64,
    pub rec: Rec,
}

/// Begins and ends matched in time order at the end, sorted with bounded memory ([`Runs`]).
pub struct TimeOrdered {
    kept: Runs<Kept>,
    order: u64,
}

impl Default for TimeOrdered {
    /// Two million atrace markers held to the end took 375–391 MB.
    fn default() -> Self {
        TimeOrdered::with_run(RUN_BYTES)
    }
}

impl TimeOrdered {
    fn with_run(run: usize) -> Self {
        TimeOrdered {
            kept: Runs::new(run, "to order begins and ends"),
            order: 0,
        }
    }

    /// A begin or end on `track`, matched in time order at the end.
    pub fn keep(&mut self, track: TrackId, rec: Rec) -> io::Result<()> {
        self.order += 1;
        self.kept.push(&Kept {
            track,
            order: self.order,
            rec,
        })
    }

    /// Every begin and end kept so far: by track id, each track's in time order (file order
    /// among equal times).
    pub fn drain(&mut self) -> io::Result<Sorted<Kept>> {
        std::mem::take(self).kept.sorted()
    }
}

/// A record on disk: track, time, order, kind (begin or end) and the end's byte offset; then a
/// begin's slice in the IR codec (its time against the header's, so one byte), or an end's
/// other fields in its varints (its time is the header's).
const BEGIN: u8 = 0;
const END: u8 = 1;

impl Record for Kept {
    type Key = (TrackId, i64, u64);

    fn key(&self) -> Self::Key {
        (self.track, self.rec.ts(), self.order)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.track.0.to_le_bytes());
        out.extend_from_slice(&self.rec.ts().to_le_bytes());
        out.extend_from_slice(&self.order.to_le_bytes());
        match &self.rec {
            Rec::Begin(s) => {
                out.push(BEGIN);
                out.extend_from_slice(&0u64.to_le_bytes());
                codec::encode_slice(s, s.ts, out);
            }
            Rec::End(e) => {
                out.push(END);
                out.extend_from_slice(&e.at.to_le_bytes());
                codec::put_opt_u32(out, e.name.map(|n| n.0));
                codec::put_opt_u32(out, e.cat.map(|c| c.0));
                codec::put_opt_i64(out, e.thread_time);
                codec::put_opt_i64(out, e.thread_dur);
                codec::put_args(out, &e.args);
            }
        }
    }

    fn decode(b: &[u8]) -> io::Result<Kept> {
        let damaged = || io::Error::other("a begin or end read back is damaged");
        let mut f = Fields::new(b);
        let (Some(track), Some(ts), Some(order), Some(kind), Some(at)) =
            (f.u32(), f.i64(), f.u64(), f.u8(), f.u64())
        else {
            return Err(damaged());
        };
        if kind != BEGIN && kind != END {
            return Err(damaged());
        }
        let rec = decode_rec((kind, ts, at), &mut Decoder::with_base(f.rest(), ts))
            .map_err(|_| damaged())?;
        Ok(Kept {
            track: TrackId(track),
            order,
            rec,
        })
    }
}

/// A begin's slice, or an end's fields, after the header (of kind, time and offset).
fn decode_rec((kind, ts, at): (u8, i64, u64), d: &mut Decoder) -> tracex_ir::Result<Rec> {
    if kind == BEGIN {
        return Ok(Rec::Begin(d.slice()?));
    }
    Ok(Rec::End(End {
        ts,
        name: d.opt_u32()?.map(StrId),
        cat: d.opt_u32()?.map(StrId),
        thread_time: d.opt_i64()?,
        thread_dur: d.opt_i64()?,
        args: d.args()?,
        at,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracex_ir::{Arg, Value};

    /// (track, time, order) of every record kept, as drained.
    fn drained(o: &mut TimeOrdered) -> Vec<(TrackId, i64, u64)> {
        let mut sorted = o.drain().unwrap();
        let mut got = Vec::new();
        while let Some(k) = sorted.next().unwrap() {
            got.push(k.key());
        }
        got
    }

    #[test]
    fn records_come_out_by_track_in_time_then_file_order() {
        for run in [1, 100, RUN_BYTES] {
            let mut o = TimeOrdered::with_run(run);
            let (a, b) = (TrackId(1), TrackId(0));
            o.keep(a, Rec::End(End::plain(30, 0))).unwrap();
            o.keep(a, Rec::Begin(Slice::new(a, 10, 0, StrId::EMPTY)))
                .unwrap();
            o.keep(b, Rec::End(End::plain(20, 0))).unwrap();
            o.keep(a, Rec::End(End::plain(10, 0))).unwrap();
            // tracks in id order; equal times in file order
            assert_eq!(
                drained(&mut o),
                vec![(b, 20, 3), (a, 10, 2), (a, 10, 4), (a, 30, 1)],
                "runs of {run}"
            );
            assert!(drained(&mut o).is_empty());
        }
    }

    #[test]
    fn begins_and_ends_read_back_from_disk_are_those_kept() {
        let t = TrackId(7);
        let mut begin = Slice::new(t, -5, 3, StrId(4));
        begin.dur = None;
        begin.cat = Some(StrId(9));
        begin.args = vec![Arg {
            key: StrId(2),
            value: Value::str("x"),
        }];
        begin.thread_ts = Some(11);
        let named = End {
            ts: 1 << 60,
            name: Some(StrId(3)),
            cat: None,
            args: vec![Arg {
                key: StrId(1),
                value: Value::Int(-1),
            }],
            thread_time: Some(2),
            thread_dur: Some(8),
            at: 1234,
        };
        let plain = End::plain(0, u64::MAX);
        let shown = |r: &Rec| match r {
            Rec::Begin(s) => format!("{s:?}"),
            Rec::End(e) => format!(
                "{} {:?} {:?} {:?} {:?} {:?} {}",
                e.ts, e.name, e.cat, e.args, e.thread_time, e.thread_dur, e.at
            ),
        };
        // kept out of time order, each read back at its own time (which the header carries)
        let recs = [Rec::End(named), Rec::Begin(begin), Rec::End(plain)];
        let mut want: Vec<(i64, String)> = recs.iter().map(|r| (r.ts(), shown(r))).collect();
        want.sort();
        let want: Vec<String> = want.into_iter().map(|(_, s)| s).collect();
        let mut o = TimeOrdered::with_run(1);
        for r in recs {
            o.keep(t, r).unwrap();
        }
        let mut sorted = o.drain().unwrap();
        let mut got = Vec::new();
        while let Some(k) = sorted.next().unwrap() {
            got.push(shown(&k.rec));
        }
        assert_eq!(got, want);
        let mut bytes = Vec::new();
        Kept::encode(
            &Kept {
                track: t,
                order: 1,
                rec: Rec::End(End::plain(0, 0)),
            },
            &mut bytes,
        );
        bytes[20] = 7;
        assert!(Kept::decode(&bytes).is_err());
        assert!(Kept::decode(&bytes[..10]).is_err());
    }
}
