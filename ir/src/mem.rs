//! An in-memory trace: a sink that keeps every event (for `dump`, tests and small inputs).

use crate::defs::Defs;
use crate::diag::Diagnostics;
use crate::error::Result;
use crate::event::Event;
use crate::sink::{Sink, Stage};

/// Collects events in arrival order.
#[derive(Default, Debug)]
pub struct MemSink {
    pub events: Vec<Event>,
    pub finished: bool,
}

impl Sink for MemSink {
    fn event(&mut self, _: &Defs, _: &mut Diagnostics, event: Event) -> Result<()> {
        self.events.push(event);
        Ok(())
    }

    fn finish(&mut self, _: &Defs, _: &mut Diagnostics) -> Result<()> {
        self.finished = true;
        Ok(())
    }
}

/// A whole trace held in memory.
#[derive(Default, Debug)]
pub struct Trace {
    pub defs: Defs,
    pub diag: Diagnostics,
    pub events: Vec<Event>,
}

impl Trace {
    /// Pushes a copy of every event into `stage`, then ends it.
    pub fn replay(&mut self, stage: &mut dyn Stage) -> Result<()> {
        for ev in self.events.clone() {
            stage.push(&mut self.defs, &mut self.diag, ev)?;
        }
        stage.end(&mut self.defs, &mut self.diag)
    }
}
