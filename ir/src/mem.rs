//! An in-memory trace: a sink that keeps every event (for `dump`, tests and small inputs).

use crate::defs::Defs;
use crate::error::Result;
use crate::event::Event;
use crate::sink::Sink;

/// Collects events in arrival order.
#[derive(Default, Debug)]
pub struct MemSink {
    pub events: Vec<Event>,
    pub finished: bool,
}

impl Sink for MemSink {
    fn event(&mut self, _: &mut Defs, event: Event) -> Result<()> {
        self.events.push(event);
        Ok(())
    }

    fn finish(&mut self, _: &mut Defs) -> Result<()> {
        self.finished = true;
        Ok(())
    }
}

/// A whole trace held in memory.
#[derive(Default, Debug)]
pub struct Trace {
    pub defs: Defs,
    pub events: Vec<Event>,
}

impl Trace {
    /// Pushes a copy of every event into `sink`, then finishes it.
    pub fn replay(&mut self, sink: &mut dyn Sink) -> Result<()> {
        for ev in self.events.clone() {
            sink.event(&mut self.defs, ev)?;
        }
        sink.finish(&mut self.defs)
    }
}
