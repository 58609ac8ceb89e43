//! Events: what happened on a track at a time.

use crate::model::{Args, CounterId, StackId, TrackId};
use crate::strings::StrId;
use crate::time::{Dur, Ts};

/// A span of time on a track: a function call, a kernel, an NVTX range.
#[derive(Clone, Debug, PartialEq)]
pub struct Slice {
    pub track: TrackId,
    pub ts: Ts,
    /// `None` when the input never recorded the end (a `B` without `E`, an NVTX range left open).
    pub dur: Option<Dur>,
    pub name: StrId,
    pub cat: Option<StrId>,
    pub args: Args,
    /// Call stack at the start of the slice (Chrome `sf`/`stack`, nsys CUDA API backtraces).
    pub stack: Option<StackId>,
    /// A Chrome reserved colour name (`cname`).
    pub color: Option<StrId>,
    /// Thread-clock start and duration (Chrome `tts`/`tdur`).
    pub thread_ts: Option<Ts>,
    pub thread_dur: Option<Dur>,
}

impl Slice {
    /// A slice with no optional fields set.
    pub fn new(track: TrackId, ts: Ts, dur: Dur, name: StrId) -> Slice {
        Slice {
            track,
            ts,
            dur: Some(dur),
            name,
            cat: None,
            args: Args::new(),
            stack: None,
            color: None,
            thread_ts: None,
            thread_dur: None,
        }
    }

    /// End time; an open slice counts as ending at `open_end`.
    pub fn end_or(&self, open_end: Ts) -> Ts {
        match self.dur {
            Some(d) => self.ts.saturating_add(d),
            None => open_end,
        }
    }
}

/// A point event on a track.
#[derive(Clone, Debug, PartialEq)]
pub struct Instant {
    pub track: TrackId,
    pub ts: Ts,
    pub name: StrId,
    pub cat: Option<StrId>,
    pub args: Args,
    pub stack: Option<StackId>,
    pub color: Option<StrId>,
}

impl Instant {
    /// An instant with no optional fields set.
    pub fn new(track: TrackId, ts: Ts, name: StrId) -> Instant {
        Instant {
            track,
            ts,
            name,
            cat: None,
            args: Args::new(),
            stack: None,
            color: None,
        }
    }
}

/// A counter reading.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CounterValue {
    pub counter: CounterId,
    pub ts: Ts,
    pub value: Num,
}

/// Identifies one flow (an arrow from one point to another). Unique within a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowId(pub u64);

/// Position of a point along its flow: one `Start`, any number of `Step`s, one `End`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlowRole {
    Start,
    Step,
    End,
}

/// Which slice a flow point attaches to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlowBind {
    /// The innermost slice on the track that contains `ts` (Chrome `bp:"e"`, the default for
    /// starts and steps).
    Enclosing,
    /// The next slice that starts at or after `ts` (Chrome `f` without `bp`).
    Next,
}

/// One end (or step) of a flow. The points of one [`FlowId`] arrive as a complete chain: importers
/// pair them and drop (and count) ends that have no partner.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowPoint {
    pub id: FlowId,
    pub role: FlowRole,
    pub track: TrackId,
    pub ts: Ts,
    pub bind: FlowBind,
    pub name: Option<StrId>,
    pub cat: Option<StrId>,
}

/// A stack sample on a thread track. `ts == None` for untimed aggregate samples (folded input).
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub track: TrackId,
    pub ts: Option<Ts>,
    pub stack: Option<StackId>,
    pub weight: i64,
    pub cpu: Option<u32>,
    /// What was sampled (`cycles:HG`), when the input says.
    pub name: Option<StrId>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Slice(Slice),
    Instant(Instant),
    Counter(CounterValue),
    Flow(FlowPoint),
    Sample(Sample),
}

impl Event {
    /// The event's timestamp; untimed samples sort first.
    pub fn ts(&self) -> Ts {
        match self {
            Event::Slice(s) => s.ts,
            Event::Instant(i) => i.ts,
            Event::Counter(c) => c.ts,
            Event::Flow(f) => f.ts,
            Event::Sample(s) => s.ts.unwrap_or(i64::MIN),
        }
    }

    /// Moves the event in time by `delta` ns (thread-clock times are left alone).
    pub fn shift(&mut self, delta: i64) {
        match self {
            Event::Slice(s) => s.ts += delta,
            Event::Instant(i) => i.ts += delta,
            Event::Counter(c) => c.ts += delta,
            Event::Flow(f) => f.ts += delta,
            Event::Sample(s) => {
                if let Some(t) = &mut s.ts {
                    *t += delta;
                }
            }
        }
    }

    /// The track the event lives on, if it has one (counters have none).
    pub fn track(&self) -> Option<TrackId> {
        match self {
            Event::Slice(s) => Some(s.track),
            Event::Instant(i) => Some(i.track),
            Event::Counter(_) => None,
            Event::Flow(f) => Some(f.track),
            Event::Sample(s) => Some(s.track),
        }
    }

    /// Stable short names of the variants, in the order of [`Event::kind_index`].
    pub const KIND_NAMES: [&'static str; 5] = ["slice", "instant", "counter", "flow", "sample"];

    /// The variant's number, for counts kept in an array (a map look-up per event costs).
    pub fn kind_index(&self) -> usize {
        match self {
            Event::Slice(_) => 0,
            Event::Instant(_) => 1,
            Event::Counter(_) => 2,
            Event::Flow(_) => 3,
            Event::Sample(_) => 4,
        }
    }

    /// Stable short name of the variant, used in counts and dumps.
    pub fn kind_name(&self) -> &'static str {
        Self::KIND_NAMES[self.kind_index()]
    }
}
