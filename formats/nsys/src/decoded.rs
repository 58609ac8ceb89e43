//! What decoding one row gives: an event and the hook to run when the merge emits it, or the
//! reason the row gave none; and the parts every slice or instant is made of.

use tracex_ir::{Args, Error, Event, Instant, Slice, StackId, StrId, TrackId};

use crate::db::{BadValue, Cols};

/// What to do when a decoded event is emitted.
#[derive(Clone, Copy, Debug)]
pub enum Hook {
    None,
    /// GPU work of flow source `src`, row `rowid`: ends the flow of its launch, if any.
    Gpu {
        src: u8,
        rowid: i64,
    },
    /// A launch of GPU row `grow` of source `src` that starts at `gpu_start`.
    Launch {
        src: u8,
        grow: i64,
        gpu_start: i64,
        /// The flow's id when it is unique: the launch's correlation id.
        correlation: Option<u64>,
    },
    /// An NVTX push/pop range (for the NVTX names of kernels launched inside it); `emit` false
    /// when the range itself is not wanted in the output.
    NvtxPush {
        end: i64,
        name: StrId,
        emit: bool,
    },
}

/// Why a row gave no event.
pub enum Skip {
    /// A value of the wrong type: counted, row skipped.
    Bad(BadValue),
    /// No global thread/process id: counted, row skipped.
    NoId(&'static str),
    /// An input or SQLite failure: the import stops.
    Fatal(Error),
}

impl From<BadValue> for Skip {
    fn from(b: BadValue) -> Skip {
        Skip::Bad(b)
    }
}

impl From<Error> for Skip {
    fn from(e: Error) -> Skip {
        Skip::Fatal(e)
    }
}

pub type Decoded = Result<Option<(Event, Hook)>, Skip>;

/// Where the decoders of the most frequent rows (CUDA API calls, GPU work, launches) put their
/// event, instead of returning it: the merge's slot for the stream's next event. An event
/// returned was copied out of the return value as soon as it was made, by wide loads waiting
/// on the narrow stores that had just made it (three fifths of the merge's own reading of
/// streams); made in the slot, it is next copied an event later.
pub type Slot = Option<(Event, Hook)>;

/// The start, end and thread of a CPU-side range: the first columns after the rowid.
pub fn thread_range(c: &mut Cols) -> Result<(i64, Option<i64>, i64), Skip> {
    let start = c.int("start")?;
    let end = c.opt_int("end")?;
    let Some(gtid) = c.opt_int("globalTid")? else {
        return Err(Skip::NoId("globalTid"));
    };
    Ok((start, end, gtid))
}

/// The parts of a slice or instant event.
pub struct Parts {
    pub track: TrackId,
    pub ts: i64,
    pub name: StrId,
    pub cat: StrId,
    pub args: Args,
}

impl Parts {
    /// A slice of duration `dur` (`None`: open) with these parts.
    #[inline]
    pub fn slice(self, dur: Option<i64>, stack: Option<StackId>, color: Option<StrId>) -> Event {
        let mut s = Slice::new(self.track, self.ts, 0, self.name);
        s.dur = dur;
        s.cat = Some(self.cat);
        s.args = self.args;
        s.stack = stack;
        s.color = color;
        Event::Slice(s)
    }

    /// The decoding of a row into an uncoloured instant with no hook.
    pub fn plain_instant(track: TrackId, ts: i64, name: StrId, cat: StrId, args: Args) -> Decoded {
        let parts = Parts {
            track,
            ts,
            name,
            cat,
            args,
        };
        Ok(Some((parts.instant(None), Hook::None)))
    }

    /// An instant with these parts.
    #[inline]
    pub fn instant(self, color: Option<StrId>) -> Event {
        Event::Instant(Instant {
            track: self.track,
            ts: self.ts,
            name: self.name,
            cat: Some(self.cat),
            args: self.args,
            stack: None,
            color,
        })
    }
}
