//! Flows as MPI messages, written while streaming.
//!
//! Each hop of a flow (start → step → ... → end) becomes an MpiSend on the location of one point
//! and an MpiRecv on the location of the next, on a communicator made for flows, so Vampir draws
//! a message line. The send is written at the earlier point, but its receiver is only known when
//! the next point arrives. So a location whose send waits for its receiver holds its later events
//! back (a queue in the exporter) until that point arrives; other locations carry on. This module
//! keeps the bookkeeping: hop numbers, the sender of each receive, the receiver of each send.

use rustc_hash::{FxHashMap, FxHashSet};
use tracex_ir::{FlowId, FlowRole};

/// What the exporter needs to know when a flow point arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Position of the point in its flow (0 = start).
    pub hop: u32,
    /// Rank of the previous point's location (the sender of this point's receive).
    pub sender: Option<u32>,
    /// A location whose send was waiting for this point, and can now go on.
    pub unblocked: Option<u32>,
}

#[derive(Default)]
pub struct FlowLinks {
    /// Per flow in flight: points seen so far and the rank of the last one.
    flights: FxHashMap<FlowId, (u32, u32)>,
    /// Receivers of sends not written yet, by (flow, hop).
    receivers: FxHashMap<(FlowId, u32), u32>,
    /// Sends blocked on their receiver, by (flow, hop): the blocked location.
    waiting: FxHashMap<(FlowId, u32), u32>,
    /// Sends written without their receiver (the exporter gave up waiting).
    abandoned: FxHashSet<(FlowId, u32)>,
}

impl FlowLinks {
    /// Records that a point of `id` arrived on the location with rank `rank`.
    pub fn arrive(&mut self, id: FlowId, role: FlowRole, rank: u32) -> Arrival {
        let (hop, sender) = match self.flights.get(&id) {
            Some(&(seen, last)) => (seen, Some(last)),
            None => (0, None),
        };
        let mut unblocked = None;
        if hop > 0 && !self.abandoned.remove(&(id, hop - 1)) {
            self.receivers.insert((id, hop - 1), rank);
            unblocked = self.waiting.remove(&(id, hop - 1));
        }
        if role == FlowRole::End {
            self.flights.remove(&id);
        } else {
            self.flights.insert(id, (hop + 1, rank));
        }
        Arrival {
            hop,
            sender,
            unblocked,
        }
    }

    /// The receiver of the send of hop `hop`, if its next point has arrived.
    pub fn take_receiver(&mut self, id: FlowId, hop: u32) -> Option<u32> {
        self.receivers.remove(&(id, hop))
    }

    /// Notes that the send of (`id`, `hop`) on location `loc` waits for its receiver.
    pub fn wait(&mut self, id: FlowId, hop: u32, loc: u32) {
        self.waiting.insert((id, hop), loc);
    }

    /// Gives up waiting (the exporter writes the send to its own location instead).
    pub fn abandon(&mut self, id: FlowId, hop: u32) {
        self.waiting.remove(&(id, hop));
        self.abandoned.insert((id, hop));
    }

    /// Flows and hops still tracked (for tests: a complete stream leaves nothing).
    #[cfg(test)]
    pub fn in_flight(&self) -> usize {
        self.flights.len() + self.receivers.len() + self.waiting.len() + self.abandoned.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_links_each_hop() {
        let mut f = FlowLinks::default();
        let id = FlowId(1);
        let a = f.arrive(id, FlowRole::Start, 3);
        assert_eq!((a.hop, a.sender, a.unblocked), (0, None, None));
        // the start's send is processed before the next point arrives: it waits
        assert_eq!(f.take_receiver(id, 0), None);
        f.wait(id, 0, 3);
        let b = f.arrive(id, FlowRole::Step, 5);
        assert_eq!((b.hop, b.sender, b.unblocked), (1, Some(3), Some(3)));
        assert_eq!(f.take_receiver(id, 0), Some(5));
        let c = f.arrive(id, FlowRole::End, 5);
        assert_eq!((c.hop, c.sender, c.unblocked), (2, Some(5), None));
        // the step's send is processed after the end arrived: no wait
        assert_eq!(f.take_receiver(id, 1), Some(5));
        assert_eq!(f.in_flight(), 0);
        // a hop given up on: its next point must not leave a receiver behind
        let id = FlowId(2);
        f.arrive(id, FlowRole::Start, 1);
        f.wait(id, 0, 1);
        f.abandon(id, 0);
        let e = f.arrive(id, FlowRole::End, 2);
        assert_eq!(e.unblocked, None);
        assert_eq!(f.in_flight(), 0);
    }
}
