//! Definitions that events refer to: processes, threads, tracks, counters, frames, values.

use crate::strings::StrId;

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident, $prefix:literal) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            /// Position in its table in [`crate::Defs`].
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

id_type!(
    /// A process (or a GPU device shown as a process) in [`crate::Defs::processes`].
    ProcessId,
    "p"
);
id_type!(
    /// A thread in [`crate::Defs::threads`].
    ThreadId,
    "t"
);
id_type!(
    /// A track in [`crate::Defs::tracks`]: the timeline a slice or instant lives on.
    TrackId,
    "k"
);
id_type!(
    /// One counter series in [`crate::Defs::counters`].
    CounterId,
    "c"
);
id_type!(
    /// A stack frame in [`crate::stack::StackTable`].
    FrameId,
    "f"
);
id_type!(
    /// A node of the stack prefix tree in [`crate::stack::StackTable`].
    StackId,
    "s"
);

/// Who set a name: a later name replaces an earlier one only at the same or a higher priority
/// (so a thread name from an explicit record beats one guessed from an event).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub enum NamePriority {
    /// No name, or a placeholder.
    #[default]
    None,
    /// Derived from something else (a command line, a stream number).
    Inferred,
    /// Stated by the input (Chrome `M` records, nsys `ThreadNames`).
    Explicit,
    /// Forced by the user.
    User,
}

/// A typed argument value. Strings are owned (`Str`: values are often unique) or, where an
/// importer knows they repeat, interned (`Sym`).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(Box<str>),
    /// A string interned in `Defs`, the same to every reader as `Str` of its text: kernel names
    /// and enumeration labels repeat on every event, so they are neither copied nor freed per
    /// event, and exporters keep what they make of each (an escaped literal, an iid) by id.
    Sym(StrId),
    /// A JSON object, array or out-of-range number, kept as its exact text.
    Json(Box<str>),
    /// `Json` of a text interned in `Defs`, as `Sym` is `Str`: for JSON values that repeat
    /// (a kernel's grid and block shapes, its stack of NVTX ranges).
    JsonSym(StrId),
}

impl Value {
    pub fn str(s: impl Into<Box<str>>) -> Value {
        Value::Str(s.into())
    }
}

/// A key/value pair attached to an event or a definition.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    pub key: StrId,
    pub value: Value,
}

/// Arguments in input order. Keys are unique within one list.
pub type Args = Vec<Arg>;

/// Appends `key` = `value()` to `args`, making the value once the list has room, so that it is
/// stored straight into the list. An argument made first and then pushed (its value returned
/// in memory, merged from the arms of a `match`, or kept across the push's growing of the list)
/// is copied through the stack by wide loads that wait on the narrow stores that just made it:
/// a store-forwarding stall, which was a fifth of the decoding of nsys kernel rows. Hot loops
/// read their scalars first and pass a closure that only wraps them.
#[inline(always)]
pub fn push_arg(args: &mut Args, key: StrId, value: impl FnOnce() -> Value) {
    args.extend(std::iter::once_with(|| Arg {
        key,
        value: value(),
    }));
}

/// What a process stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum ProcessKind {
    /// An operating-system process (or whatever the input called a pid).
    #[default]
    Host,
    /// A GPU or other accelerator, shown as its own process; `device` is the input's device index.
    Device { device: u32 },
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Process {
    pub kind: ProcessKind,
    /// The OS pid when the input gave a number that fits `i64`.
    pub os_pid: Option<i64>,
    /// The input's own identifier when it was not a plain number (Chrome string pids, >64-bit ids).
    pub label: Option<StrId>,
    pub name: Option<StrId>,
    pub name_priority: NamePriority,
    pub sort_index: Option<i64>,
    /// The machine this process ran on, when the input says (nsys host id, OTF2 system tree).
    pub host: Option<StrId>,
    /// Further per-process metadata (command line, Chrome `M` records other than names), in input order.
    pub meta: Args,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Thread {
    pub process: ProcessId,
    pub os_tid: Option<i64>,
    pub label: Option<StrId>,
    pub name: Option<StrId>,
    pub name_priority: NamePriority,
    pub sort_index: Option<i64>,
    pub meta: Args,
    /// The thread's own track, made together with the thread.
    pub track: TrackId,
}

/// The kind of timeline a track is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TrackKind {
    /// A thread's call timeline: slices nest strictly.
    Thread(ThreadId),
    /// Work on one GPU stream (or queue) of a device process: slices nest strictly.
    GpuStream { device: u32, stream: u32 },
    /// Asynchronous ranges of a process (Chrome `b`/`e`, NVTX start/end): slices may overlap;
    /// [`crate::nest::OverlapRouter`] lays overlapping ones out on overflow lanes.
    Async,
    /// Process-wide instants (Chrome instant scope `p`).
    Process,
    /// Trace-wide instants (Chrome instant scope `g`); has no process.
    Global,
    /// Slices that partially overlapped others on track `of`, spilled here instead of being
    /// clipped or dropped. `level` 1 is the first overflow lane.
    Overflow { of: TrackId, level: u32 },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Track {
    pub kind: TrackKind,
    pub process: Option<ProcessId>,
    pub name: Option<StrId>,
    /// The input's identifier of this track (Chrome async id, object id), kept for round trips.
    pub label: Option<StrId>,
    pub sort_index: Option<i64>,
}

impl Track {
    /// Whether slices on this track must nest (true for all but async tracks).
    pub fn is_strict(&self) -> bool {
        !matches!(
            self.kind,
            TrackKind::Async | TrackKind::Process | TrackKind::Global
        )
    }
}

/// One counter series: `name` groups series that are shown together (a Chrome `C` event's name),
/// `series` tells this one apart (the `C` event's argument key).
#[derive(Clone, Debug, PartialEq)]
pub struct CounterDef {
    pub process: Option<ProcessId>,
    pub name: StrId,
    pub series: Option<StrId>,
    /// The input's counter id (Chrome `C` `id`), kept for round trips.
    pub label: Option<StrId>,
    pub unit: Option<StrId>,
    pub cat: Option<StrId>,
}

/// A stack frame: a function name and where it comes from (module, file, category).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Frame {
    pub name: StrId,
    pub module: Option<StrId>,
}

/// The trace's clock: what a timestamp of 0 means.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    /// Unix time in ns of `ts == 0`, when the input says (nsys `utcEpochNs`, Chrome
    /// `baseTimeNanoseconds`, OTF2 clock properties).
    pub origin_unix_ns: Option<i64>,
    /// A name for the clock domain when the input gives one (`LINUX_CLOCK_MONOTONIC`).
    pub domain: Option<StrId>,
}
