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

    /// Runs `run` with a context whose events pass through `filter` on their way to this
    /// context's sink, so that one importer can reuse another and adjust what it emits (the
    /// CUPTI importer reads CUPTI's Chrome JSON with the Chrome importer). `filter` may change
    /// an event, drop it (`Ok(None)`), or add definitions.
    pub fn filtered<F>(
        &mut self,
        filter: F,
        run: impl FnOnce(&mut ImportCtx<'_>) -> Result<()>,
    ) -> Result<()>
    where
        F: FnMut(&mut Defs, Event) -> Result<Option<Event>>,
    {
        let mut sink = Filtered {
            filter,
            inner: &mut *self.sink,
        };
        let mut inner = ImportCtx::new(&mut *self.defs, &mut sink, self.progress);
        let result = run(&mut inner);
        self.emitted += inner.emitted;
        result
    }
}

/// The sink of [`ImportCtx::filtered`]: never finished itself (the outer sink's owner does that).
struct Filtered<'s, F> {
    filter: F,
    inner: &'s mut dyn Sink,
}

impl<F> Sink for Filtered<'_, F>
where
    F: FnMut(&mut Defs, Event) -> Result<Option<Event>>,
{
    fn event(&mut self, defs: &mut Defs, event: Event) -> Result<()> {
        match (self.filter)(defs, event)? {
            Some(e) => self.inner.event(defs, e),
            None => Ok(()),
        }
    }

    fn finish(&mut self, _: &mut Defs) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Instant;
    use crate::mem::MemSink;
    use crate::model::TrackId;

    fn instant(ts: i64) -> Event {
        Event::Instant(Instant {
            track: TrackId(0),
            ts,
            name: crate::StrId::EMPTY,
            cat: None,
            args: Vec::new(),
            stack: None,
            color: None,
        })
    }

    #[test]
    fn filtered_context_rewrites_and_drops() {
        let mut defs = Defs::new();
        let mut sink = MemSink::default();
        let progress = Progress::new();
        let mut ctx = ImportCtx::new(&mut defs, &mut sink, &progress);
        let mut seen = 0;
        ctx.filtered(
            |_, ev| {
                seen += 1;
                Ok((ev.ts() % 2 == 0).then(|| instant(ev.ts() * 10)))
            },
            |inner| (1..=4).try_for_each(|ts| inner.emit(instant(ts))),
        )
        .unwrap();
        ctx.emit(instant(5)).unwrap();
        assert_eq!(ctx.emitted(), 5);
        assert_eq!(seen, 4);
        let ts: Vec<i64> = sink.events.iter().map(Event::ts).collect();
        assert_eq!(ts, vec![20, 40, 5]);
        assert!(!sink.finished);
    }
}
