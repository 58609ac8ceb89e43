//! The tracex trace model.
//!
//! Importers push a stream of [`Event`]s into a [`Stage`] that ends in a [`Sink`], together with a
//! [`Defs`] table that holds everything the events refer to: interned strings, processes,
//! threads, tracks, counters, stack frames and trace metadata, and the [`Diagnostics`] counted on
//! the way. Sinks read `Defs` and cannot change it. Time is always an `i64` count of nanoseconds.
//!
//! The crate depends on no trace format. Format crates (`tracex-chrome`, `tracex-nsys`, ...) map
//! their files to and from this model; adapters in this crate ([`order::Sorter`],
//! [`nest::OverlapRouter`]) sit between importers and exporters. `docs/ir.md` states the
//! invariants every stream obeys.
//!
//! ```
//! use tracex_ir::{builder::TraceBuilder, dump};
//! let mut b = TraceBuilder::new();
//! let p = b.process(42, "server");
//! let t = b.thread(p, 43, "main");
//! b.slice(t, 1_000, 500, "handle_request");
//! let trace = b.finish();
//! assert!(dump::dump(&trace.defs, &trace.events).contains("handle_request"));
//! ```

pub mod ahead;
pub mod apart;
pub mod builder;
pub mod codec;
pub mod decimal;
pub mod defs;
pub mod diag;
pub mod dump;
pub mod error;
pub mod event;
pub mod format;
pub mod idset;
pub mod io;
pub mod kind;
pub mod mem;
pub mod mirror;
pub mod model;
pub mod nest;
pub mod order;
pub mod progress;
pub mod sink;
pub mod sniff;
pub mod stack;
pub mod strings;
pub mod threaded;
pub mod time;
pub mod track;
pub mod trackmap;

pub use defs::Defs;
pub use diag::{DiagKind, Diagnostics, Location, Severity};
pub use error::{Error, Result};
pub use event::{
    CounterValue, Event, FlowBind, FlowId, FlowPoint, FlowRole, Instant, Num, Sample, Slice,
};
pub use model::{
    push_arg, Arg, Args, Clock, CounterDef, CounterId, Frame, FrameId, NamePriority, Process,
    ProcessId, ProcessKind, StackId, Thread, ThreadId, Track, TrackId, TrackKind, Value,
};
pub use progress::Progress;
pub use sink::{ArgsRead, EventOrder, ImportCtx, NullSink, Sink, Stage};
pub use sniff::{Confidence, Probe};
pub use strings::StrId;
pub use time::{Dur, Ts};
