//! An in-memory trace: a sink that keeps every event (for `dump`, tests and small inputs).

use crate::defs::Defs;
use crate::diag::Diagnostics;
use crate::error::Result;
use crate::event::Event;
use crate::progress::Progress;
use crate::sink::{ArgsRead, ImportCtx, Sink, Stage};

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
    /// What `import` makes of its input, for an output that reads `args` (tests of importers).
    pub fn imported(
        args: ArgsRead,
        import: impl FnOnce(&mut ImportCtx) -> Result<()>,
    ) -> Result<Trace> {
        let mut trace = Trace::default();
        let mut sink = MemSink::default();
        let progress = Progress::new();
        let mut ctx = ImportCtx::new(&mut trace.defs, &mut trace.diag, &mut sink, &progress)
            .reading_args(args);
        import(&mut ctx)?;
        trace.events = sink.events;
        Ok(trace)
    }

    /// Pushes a copy of every event into `stage`, then ends it.
    pub fn replay(&mut self, stage: &mut dyn Stage) -> Result<()> {
        for ev in self.events.clone() {
            stage.push(&mut self.defs, &mut self.diag, ev)?;
        }
        stage.end(&mut self.defs, &mut self.diag)
    }
}
