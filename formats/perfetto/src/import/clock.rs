//! Clocks: every timestamp becomes trace time (BOOTTIME unless a snapshot names another primary
//! clock), as trace processor does. Builtin clocks are related to the trace clock by the first
//! clock snapshot that holds both (drift between later snapshots is not followed); sequence-
//! scoped clocks (ids 64–127) by the snapshots of their own sequence, absolute or incremental,
//! in ns or a multiple of it.

use rustc_hash::FxHashMap;

use crate::pb::{BuiltinClock, ClockSnapshot};

pub const BOOTTIME: u32 = BuiltinClock::Boottime as u32;
pub const REALTIME: u32 = BuiltinClock::Realtime as u32;
pub const MONOTONIC: u32 = BuiltinClock::Monotonic as u32;

fn is_sequence_clock(id: u32) -> bool {
    (64..128).contains(&id)
}

/// The builtin clocks of the whole trace.
#[derive(Debug)]
pub struct Clocks {
    pub trace_clock: u32,
    /// Builtin clock → (trace time − clock time).
    offsets: FxHashMap<u32, i128>,
    /// Whether any snapshot was seen: without one, every clock reads as the trace clock.
    snapshots: bool,
}

impl Default for Clocks {
    fn default() -> Self {
        Clocks {
            trace_clock: BOOTTIME,
            offsets: FxHashMap::default(),
            snapshots: false,
        }
    }
}

impl Clocks {
    /// Learns from one snapshot (the first reading of each clock pair wins).
    pub fn learn(&mut self, s: &ClockSnapshot, first: bool) {
        self.snapshots = true;
        if first {
            if let Some(p) = s.primary_trace_clock.filter(|&p| p > 0) {
                self.trace_clock = p as u32;
            }
        }
        let reading = |id: u32| {
            s.clocks
                .iter()
                .find(|c| c.clock_id == Some(id))
                .and_then(|c| c.timestamp)
        };
        let Some(trace) = reading(self.trace_clock) else {
            return;
        };
        for c in &s.clocks {
            let (Some(id), Some(ts)) = (c.clock_id, c.timestamp) else {
                continue;
            };
            if !is_sequence_clock(id) && id != self.trace_clock {
                self.offsets.entry(id).or_insert(trace as i128 - ts as i128);
            }
        }
    }

    /// A builtin clock's reading in trace time.
    pub fn to_trace(&self, clock: u32, ns: i128) -> Option<i128> {
        if clock == self.trace_clock || !self.snapshots {
            return Some(ns);
        }
        self.offsets.get(&clock).map(|o| ns + o)
    }

    /// Unix time − trace time, when a snapshot related REALTIME to the trace clock.
    pub fn realtime_offset(&self) -> Option<i128> {
        if self.trace_clock == REALTIME {
            return Some(0);
        }
        self.offsets.get(&REALTIME).map(|o| -o)
    }
}

/// A sequence-scoped clock as its last snapshot defined it.
#[derive(Clone, Debug)]
pub struct SequenceClock {
    /// The clock's reading in the snapshot (in its units).
    base: u64,
    /// A builtin clock and its reading (ns) in the same snapshot.
    builtin: (u32, i128),
    unit_ns: u64,
    incremental: bool,
    /// The last value reached by deltas (incremental clocks).
    last: u64,
}

/// The sequence-scoped clocks of one packet sequence.
#[derive(Default, Debug)]
pub struct SequenceClocks {
    clocks: FxHashMap<u32, SequenceClock>,
}

impl SequenceClocks {
    pub fn learn(&mut self, s: &ClockSnapshot, trace: &Clocks) {
        // the builtin reading to anchor on: the trace clock, else BOOTTIME, else any we can map
        let anchor = s
            .clocks
            .iter()
            .filter_map(|c| Some((c.clock_id?, c.timestamp?)))
            .filter(|(id, _)| !is_sequence_clock(*id))
            .min_by_key(|(id, _)| {
                if *id == trace.trace_clock {
                    0
                } else if *id == BOOTTIME {
                    1
                } else if trace.to_trace(*id, 0).is_some() {
                    2
                } else {
                    3
                }
            });
        let Some((bid, bts)) = anchor else {
            return;
        };
        for c in &s.clocks {
            let (Some(id), Some(ts)) = (c.clock_id, c.timestamp) else {
                continue;
            };
            if is_sequence_clock(id) {
                self.clocks.insert(
                    id,
                    SequenceClock {
                        base: ts,
                        builtin: (bid, bts as i128),
                        unit_ns: c.unit_multiplier_ns.unwrap_or(1).max(1),
                        incremental: c.is_incremental.unwrap_or(false),
                        last: ts,
                    },
                );
            }
        }
    }

    /// A packet timestamp on `clock` in trace time; `None` for a clock no snapshot defined.
    /// Incremental clocks advance by the timestamp.
    pub fn convert(&mut self, trace: &Clocks, clock: u32, ts: u64) -> Option<i128> {
        if !is_sequence_clock(clock) {
            return trace.to_trace(clock, ts as i128);
        }
        let c = self.clocks.get_mut(&clock)?;
        let value = if c.incremental {
            c.last = c.last.wrapping_add(ts);
            c.last
        } else {
            ts
        };
        let ns = c.builtin.1 + (value as i128 - c.base as i128) * c.unit_ns as i128;
        trace.to_trace(c.builtin.0, ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::clock_snapshot::Clock;

    fn clock(id: u32, ts: u64, incremental: bool, unit: Option<u64>) -> Clock {
        Clock {
            clock_id: Some(id),
            timestamp: Some(ts),
            is_incremental: Some(incremental),
            unit_multiplier_ns: unit,
        }
    }

    #[test]
    fn builtin_and_sequence_clocks() {
        let snap = ClockSnapshot {
            clocks: vec![
                clock(BOOTTIME, 1_000, false, None),
                clock(REALTIME, 1_700_000_000_000_001_000, false, None),
                clock(MONOTONIC, 900, false, None),
                clock(64, 10, true, Some(1000)),
            ],
            primary_trace_clock: None,
        };
        let mut c = Clocks::default();
        c.learn(&snap, true);
        assert_eq!(c.to_trace(MONOTONIC, 1_900), Some(2_000));
        assert_eq!(c.realtime_offset(), Some(1_700_000_000_000_000_000));
        assert_eq!(c.to_trace(5, 1), None);
        // a trace without snapshots has one clock
        assert_eq!(Clocks::default().to_trace(MONOTONIC, 7), Some(7));
        let mut s = SequenceClocks::default();
        s.learn(&snap, &c);
        // deltas of 2 µs and 3 µs from the snapshot's reading
        assert_eq!(s.convert(&c, 64, 2), Some(3_000));
        assert_eq!(s.convert(&c, 64, 3), Some(6_000));
        assert_eq!(s.convert(&c, 65, 3), None);
    }
}
