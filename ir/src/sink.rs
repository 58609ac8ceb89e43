//! The push interface between importers, adapters and exporters.

use crate::defs::Defs;
use crate::error::Result;
use crate::event::Event;
use crate::progress::Progress;

/// Receives a trace as a stream of events. Every id an event carries is defined in `defs` before
/// the event arrives; names may still change until `finish`.
pub trait Sink {
    fn event(&mut self, defs: &mut Defs, event: Event) -> Result<()>;

    /// Called once after the last event. Exporters write what they held back (names, stack
    /// tables) and move their output into place; an exporter dropped without `finish` leaves no
    /// output behind.
    fn finish(&mut self, defs: &mut Defs) -> Result<()>;
}

impl<S: Sink + ?Sized> Sink for &mut S {
    fn event(&mut self, defs: &mut Defs, event: Event) -> Result<()> {
        (**self).event(defs, event)
    }
    fn finish(&mut self, defs: &mut Defs) -> Result<()> {
        (**self).finish(defs)
    }
}

impl<S: Sink + ?Sized> Sink for Box<S> {
    fn event(&mut self, defs: &mut Defs, event: Event) -> Result<()> {
        (**self).event(defs, event)
    }
    fn finish(&mut self, defs: &mut Defs) -> Result<()> {
        (**self).finish(defs)
    }
}

/// Drops everything (for measuring import speed).
#[derive(Default)]
pub struct NullSink;

impl Sink for NullSink {
    fn event(&mut self, _: &mut Defs, _: Event) -> Result<()> {
        Ok(())
    }
    fn finish(&mut self, _: &mut Defs) -> Result<()> {
        Ok(())
    }
}

/// Declares the order in which an importer pushes events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventOrder {
    /// Non-decreasing timestamps over the whole stream, slices at equal timestamps longer first.
    Sorted,
    /// Any order.
    Unsorted,
}

/// What an importer works with: the definition tables, the sink its events go to, and a
/// progress counter it may advance.
pub struct ImportCtx<'a> {
    pub defs: &'a mut Defs,
    sink: &'a mut dyn Sink,
    pub progress: &'a Progress,
    emitted: u64,
}

impl<'a> ImportCtx<'a> {
    pub fn new(defs: &'a mut Defs, sink: &'a mut dyn Sink, progress: &'a Progress) -> Self {
        ImportCtx {
            defs,
            sink,
            progress,
            emitted: 0,
        }
    }

    /// Pushes one event to the sink.
    pub fn emit(&mut self, event: Event) -> Result<()> {
        self.emitted += 1;
        self.sink.event(self.defs, event)
    }

    /// Events pushed so far.
    pub fn emitted(&self) -> u64 {
        self.emitted
    }
}
