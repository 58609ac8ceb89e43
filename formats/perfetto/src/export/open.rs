//! The slices whose end is not written yet: the exporter holds one stack of them per track, and
//! flows bound after a BEGIN was written ride on the END.

use super::event::TrackEvent;
use crate::pb::tracex as x;

/// A slice whose end is not written yet.
pub struct Open {
    pub begin: i64,
    /// Number of the BEGIN packet in the queue.
    pub begin_packet: u64,
    /// What the END packet carries: flows bound to the slice after its begin was written,
    /// and the thread time at the end.
    pub end_event: TrackEvent,
    /// Boxed: rarely any (flow points that cannot ride on the END), and an open slice is
    /// moved onto and off its track's stack.
    pub end_extra: Option<Box<x::Extra>>,
    pub end_needs_state: bool,
    /// When the slice ends; `None`: it is left open, has no END, and flows cannot ride on it.
    pub end: Option<i64>,
}
