//! The push interface between importers, pipeline stages and sinks.
//!
//! Two traits, by what a receiver may change:
//!
//! - A [`Sink`] is the end of a pipeline (an exporter, a command's collector). It reads the
//!   definitions, which it cannot change, and records what it cannot carry in the diagnostics.
//! - A [`Stage`] is what an importer pushes into: a sink (every sink is a stage), or a step in
//!   front of one that may add definitions: the overlap router adds overflow tracks, a filter
//!   adds the argument keys it marks clipped slices with. The sorter adds nothing.

use crate::defs::Defs;
use crate::diag::Diagnostics;
use crate::error::Result;
use crate::event::Event;
use crate::progress::Progress;

/// The end of a pipeline. Every id an event carries is defined in `defs` before the event
/// arrives; names may still change until `finish`, so exporters write names last.
pub trait Sink {
    fn event(&mut self, defs: &Defs, diag: &mut Diagnostics, event: Event) -> Result<()>;

    /// Called once after the last event. Exporters write what they held back (names, stack
    /// tables) and move their output into place; an exporter dropped without `finish` leaves no
    /// output behind.
    fn finish(&mut self, defs: &Defs, diag: &mut Diagnostics) -> Result<()>;

    /// The args this sink reads: all of them, unless it says otherwise.
    fn args_read(&self) -> ArgsRead {
        ArgsRead::All
    }

    /// Asked once before the first event by a pipeline that can skip its reorder stage
    /// ([`crate::order`]) and the overlap router and flow binder behind it ([`crate::nest`]):
    /// whether this sink takes the events in arrival order instead, and works out itself what
    /// it needs of the total order, with the same result. A sink that says yes is told where
    /// each input begins ([`Sink::begin_input`]) and how far each input moves in time
    /// ([`Sink::offsets`], before `finish`); its `finish` may fail with
    /// [`Error::NeedsOrder`](crate::Error::NeedsOrder), and the pipeline then runs again
    /// with the stages in place.
    fn unordered(&mut self) -> bool {
        false
    }

    /// Events from now on come from the next input (unordered sinks only; also before the
    /// first input).
    fn begin_input(&mut self) {}

    /// How many ns each input's events move to line up with the others (unordered sinks
    /// only; missing = 0).
    fn offsets(&mut self, _offsets: &[i64]) {}
}

/// The args of events a sink reads ([`Sink::args_read`]). An importer may leave the others
/// unmade ([`ImportCtx::args_read`]): a folded flame graph writes none of a CUPTI kernel's
/// dozen args, and making, sorting and reading them back was a quarter of the CPU time of a
/// GPU flame-graph merge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ArgsRead {
    #[default]
    All,
    /// Only the args with these keys.
    Only(&'static [&'static str]),
    /// Only the args with keys in either list: an output's, and those a filter in front of it
    /// reads ([`ImportCtx::filtered`]).
    Either(&'static [&'static str], &'static [&'static str]),
}

impl ArgsRead {
    pub fn reads(&self, key: &str) -> bool {
        match self {
            ArgsRead::All => true,
            ArgsRead::Only(keys) => keys.contains(&key),
            ArgsRead::Either(a, b) => a.contains(&key) || b.contains(&key),
        }
    }

    /// These args and those with the keys `more`.
    fn and(self, more: &'static [&'static str]) -> ArgsRead {
        match self {
            ArgsRead::Only(keys) => ArgsRead::Either(keys, more),
            _ => ArgsRead::All,
        }
    }
}

/// Drops the args of the events an importer emits that the output does not read, so that the
/// stages and the sorter do not carry them. Whether a key is read is asked once per key:
/// comparing the key's text for every arg of every event was 2% of the CPU time of the
/// 20k-launch GPU merge.
#[derive(Default)]
struct Projection {
    read: ArgsRead,
    /// By key ([`crate::StrId`] index): 0 not asked yet, 1 read, 2 not read.
    verdicts: Vec<u8>,
}

impl Projection {
    fn new(read: ArgsRead) -> Projection {
        Projection {
            read,
            verdicts: Vec::new(),
        }
    }

    fn apply(&mut self, defs: &Defs, event: &mut Event) {
        if matches!(self.read, ArgsRead::All) {
            return;
        }
        let args = match event {
            Event::Slice(s) => &mut s.args,
            Event::Instant(i) => &mut i.args,
            _ => return,
        };
        let (read, verdicts) = (self.read, &mut self.verdicts);
        args.retain(|a| {
            let k = a.key.0 as usize;
            if k >= verdicts.len() {
                verdicts.resize(k + 1, 0);
            }
            if verdicts[k] == 0 {
                verdicts[k] = if read.reads(defs.str(a.key)) { 1 } else { 2 };
            }
            verdicts[k] == 1
        });
    }
}

impl<S: Sink + ?Sized> Sink for &mut S {
    fn event(&mut self, defs: &Defs, diag: &mut Diagnostics, event: Event) -> Result<()> {
        (**self).event(defs, diag, event)
    }
    fn finish(&mut self, defs: &Defs, diag: &mut Diagnostics) -> Result<()> {
        (**self).finish(defs, diag)
    }
    fn args_read(&self) -> ArgsRead {
        (**self).args_read()
    }
    fn unordered(&mut self) -> bool {
        (**self).unordered()
    }
    fn begin_input(&mut self) {
        (**self).begin_input()
    }
    fn offsets(&mut self, offsets: &[i64]) {
        (**self).offsets(offsets)
    }
}

impl<S: Sink + ?Sized> Sink for Box<S> {
    fn event(&mut self, defs: &Defs, diag: &mut Diagnostics, event: Event) -> Result<()> {
        (**self).event(defs, diag, event)
    }
    fn finish(&mut self, defs: &Defs, diag: &mut Diagnostics) -> Result<()> {
        (**self).finish(defs, diag)
    }
    fn args_read(&self) -> ArgsRead {
        (**self).args_read()
    }
    fn unordered(&mut self) -> bool {
        (**self).unordered()
    }
    fn begin_input(&mut self) {
        (**self).begin_input()
    }
    fn offsets(&mut self, offsets: &[i64]) {
        (**self).offsets(offsets)
    }
}

/// Where importers push events: a [`Sink`], or a pipeline step in front of one that may add
/// definitions on the way (see the module comment). The methods are named apart from the
/// sink's so that calls stay unambiguous on a sink, which is a stage too.
pub trait Stage {
    fn push(&mut self, defs: &mut Defs, diag: &mut Diagnostics, event: Event) -> Result<()>;

    /// Called once after the last event: forwards what the stage held back, then finishes what
    /// is behind it.
    fn end(&mut self, defs: &mut Defs, diag: &mut Diagnostics) -> Result<()>;
}

impl<S: Sink + ?Sized> Stage for S {
    fn push(&mut self, defs: &mut Defs, diag: &mut Diagnostics, event: Event) -> Result<()> {
        self.event(defs, diag, event)
    }
    fn end(&mut self, defs: &mut Defs, diag: &mut Diagnostics) -> Result<()> {
        self.finish(defs, diag)
    }
}

/// Drops everything (for measuring import speed).
#[derive(Default)]
pub struct NullSink;

impl Sink for NullSink {
    fn event(&mut self, _: &Defs, _: &mut Diagnostics, _: Event) -> Result<()> {
        Ok(())
    }
    fn finish(&mut self, _: &Defs, _: &mut Diagnostics) -> Result<()> {
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

/// What an importer works with: the definition tables it adds to, the diagnostics it counts
/// data problems in, the stage its events go to, and a progress counter it may advance.
pub struct ImportCtx<'a> {
    pub defs: &'a mut Defs,
    pub diag: &'a mut Diagnostics,
    sink: &'a mut dyn Stage,
    pub progress: &'a Progress,
    emitted: u64,
    args_read: Projection,
}

impl<'a> ImportCtx<'a> {
    pub fn new(
        defs: &'a mut Defs,
        diag: &'a mut Diagnostics,
        sink: &'a mut dyn Stage,
        progress: &'a Progress,
    ) -> Self {
        ImportCtx {
            defs,
            diag,
            sink,
            progress,
            emitted: 0,
            args_read: Projection::default(),
        }
    }

    /// The context, for an output that reads only `args` ([`Sink::args_read`]).
    pub fn reading_args(mut self, args: ArgsRead) -> Self {
        self.args_read = Projection::new(args);
        self
    }

    /// The args the output reads: an importer need not make the others (and must make these).
    pub fn args_read(&self) -> ArgsRead {
        self.args_read.read
    }

    /// Pushes one event to the stage behind, without the args the output does not read.
    pub fn emit(&mut self, mut event: Event) -> Result<()> {
        self.emitted += 1;
        self.args_read.apply(self.defs, &mut event);
        self.sink.push(self.defs, self.diag, event)
    }

    /// Events pushed so far.
    pub fn emitted(&self) -> u64 {
        self.emitted
    }

    /// Runs `run` with a context whose events pass through `filter` on their way to this
    /// context's stage, so that one importer can reuse another and adjust what it emits (the
    /// CUPTI importer reads CUPTI's Chrome JSON with the Chrome importer). `filter` may change
    /// an event, drop it (`Ok(None)`), add definitions or count diagnostics. The events reach it
    /// with the args the output reads and those with the keys `reads`; it may read no others.
    pub fn filtered<F>(
        &mut self,
        reads: &'static [&'static str],
        filter: F,
        run: impl FnOnce(&mut ImportCtx<'_>) -> Result<()>,
    ) -> Result<()>
    where
        F: FnMut(&mut Defs, &mut Diagnostics, Event) -> Result<Option<Event>>,
    {
        let mut sink = Filtered {
            filter,
            inner: &mut *self.sink,
            args_read: Projection::new(self.args_read.read),
        };
        // the args only the filter reads go after it
        let mut inner = ImportCtx::new(&mut *self.defs, &mut *self.diag, &mut sink, self.progress)
            .reading_args(self.args_read.read.and(reads));
        let result = run(&mut inner);
        self.emitted += inner.emitted;
        result
    }
}

/// The stage of [`ImportCtx::filtered`]: never ended itself (the outer stage's owner does that).
struct Filtered<'s, F> {
    filter: F,
    inner: &'s mut dyn Stage,
    args_read: Projection,
}

impl<F> Stage for Filtered<'_, F>
where
    F: FnMut(&mut Defs, &mut Diagnostics, Event) -> Result<Option<Event>>,
{
    fn push(&mut self, defs: &mut Defs, diag: &mut Diagnostics, event: Event) -> Result<()> {
        match (self.filter)(defs, diag, event)? {
            Some(mut e) => {
                self.args_read.apply(defs, &mut e);
                self.inner.push(defs, diag, e)
            }
            None => Ok(()),
        }
    }

    fn end(&mut self, _: &mut Defs, _: &mut Diagnostics) -> Result<()> {
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
        let mut diag = Diagnostics::default();
        let mut sink = MemSink::default();
        let progress = Progress::new();
        let mut ctx = ImportCtx::new(&mut defs, &mut diag, &mut sink, &progress);
        let mut seen = 0;
        ctx.filtered(
            &[],
            |_, _, ev| {
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

    #[test]
    fn args_the_output_does_not_read_are_dropped_on_emit_and_after_a_filter() {
        let mut defs = Defs::new();
        let mut diag = Diagnostics::default();
        let mut sink = MemSink::default();
        let progress = Progress::new();
        let (a, b, c) = (defs.intern("a"), defs.intern("b"), defs.intern("c"));
        let with_args = |ts: i64| {
            let mut e = instant(ts);
            if let Event::Instant(i) = &mut e {
                i.args = [a, b, c]
                    .map(|key| crate::Arg {
                        key,
                        value: crate::Value::Int(1),
                    })
                    .into();
            }
            e
        };
        let keys = |e: &Event| match e {
            Event::Instant(i) => i.args.iter().map(|x| x.key).collect::<Vec<_>>(),
            _ => unreachable!(),
        };
        {
            let mut ctx = ImportCtx::new(&mut defs, &mut diag, &mut sink, &progress)
                .reading_args(ArgsRead::Only(&["b"]));
            ctx.emit(with_args(1)).unwrap();
            // the filter sees the args the output reads and those it reads itself
            ctx.filtered(
                &["a"],
                |_, _, ev| {
                    assert_eq!(keys(&ev), [a, b]);
                    Ok(Some(ev))
                },
                |inner| inner.emit(with_args(2)),
            )
            .unwrap();
            // the keys' verdicts, remembered from the first event
            ctx.emit(with_args(4)).unwrap();
        }
        let mut ctx = ImportCtx::new(&mut defs, &mut diag, &mut sink, &progress);
        ctx.emit(with_args(3)).unwrap();
        let got: Vec<_> = sink.events.iter().map(keys).collect();
        assert_eq!(got, [vec![b], vec![b], vec![b], vec![a, b, c]]);
    }
}
