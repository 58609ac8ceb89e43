//! A sink that runs on a thread of its own: [`Threaded`] hands the events to it in batches,
//! together with what changed in the definitions between two events ([`crate::mirror`]), so
//! that the sink reads every event against the definitions as they were when it was pushed,
//! exactly as it would on the pushing thread. An exporter then formats and writes while the
//! importer and the stages before it work on the other core.
//!
//! Memory: a few batches in flight. The sink's diagnostics are counted on its thread and
//! added to the caller's at `finish`; an error of the sink stops its thread and comes back at
//! the next push or at `finish`.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::{Scope, ScopedJoinHandle};

use crate::mirror::{Delta, Seen};
use crate::{ArgsRead, Defs, Diagnostics, Error, Event, Result, Sink};

/// Events per batch: large enough that a channel operation is rare, small enough that the
/// batches in flight stay a few megabytes.
const BATCH: usize = 4096;
/// Batches queued for the sink's thread at most.
const QUEUED: usize = 4;

enum Item {
    Event(Event),
    Defs(Box<Delta>),
    /// [`Sink::begin_input`] and [`Sink::offsets`] of an unordered sink.
    Input,
    Offsets(Vec<i64>),
}

enum Msg {
    Items(Vec<Item>),
    Finish,
}

/// What the sink's thread returns: its outcome and its diagnostics.
type Outcome = (Result<()>, Diagnostics);

pub struct Threaded<'scope> {
    tx: Option<SyncSender<Msg>>,
    batch: Vec<Item>,
    seen: Seen,
    /// Spent batches coming back to be filled again.
    spent: Receiver<Vec<Item>>,
    thread: Option<ScopedJoinHandle<'scope, Outcome>>,
    /// The sink's.
    args_read: ArgsRead,
}

impl<'scope> Threaded<'scope> {
    /// Runs `sink` on a thread of `scope` until [`Sink::finish`].
    pub fn spawn<'env>(
        scope: &'scope Scope<'scope, 'env>,
        sink: &'scope mut (dyn Sink + Send),
    ) -> Result<Threaded<'scope>> {
        let args_read = sink.args_read();
        let (tx, rx) = sync_channel::<Msg>(QUEUED);
        let (back, spent) = sync_channel::<Vec<Item>>(QUEUED + 2);
        let thread = std::thread::Builder::new()
            .name("tracex export".into())
            .spawn_scoped(scope, move || run(sink, rx, back))
            .map_err(Error::Io)?;
        Ok(Threaded {
            tx: Some(tx),
            batch: Vec::with_capacity(BATCH),
            seen: Seen::default(),
            spent,
            thread: Some(thread),
            args_read,
        })
    }

    /// Sends the batch; on failure, the sink's error (its thread has stopped).
    fn send(&mut self, diag: &mut Diagnostics) -> Result<()> {
        let next = (self.spent.try_recv()).unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let items = std::mem::replace(&mut self.batch, next);
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(Msg::Items(items)).is_ok());
        if sent {
            return Ok(());
        }
        self.join(diag)?;
        Err(Error::Library("the export thread stopped".into()))
    }

    /// Waits for the sink's thread and takes its diagnostics.
    fn join(&mut self, diag: &mut Diagnostics) -> Result<()> {
        self.tx = None;
        let Some(thread) = self.thread.take() else {
            return Err(Error::Library("the export thread has already ended".into()));
        };
        match thread.join() {
            Ok((result, sink_diag)) => {
                diag.merge(&sink_diag);
                result
            }
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

/// The sink's thread: definitions changes and events in the order they were pushed.
fn run(sink: &mut (dyn Sink + Send), rx: Receiver<Msg>, back: SyncSender<Vec<Item>>) -> Outcome {
    let mut defs = Defs::new();
    let mut diag = Diagnostics::default();
    let mut result = Ok(());
    for msg in rx {
        match msg {
            Msg::Items(mut items) => {
                for item in items.drain(..) {
                    match item {
                        Item::Defs(d) => defs.apply(*d),
                        Item::Input => sink.begin_input(),
                        Item::Offsets(o) => sink.offsets(&o),
                        Item::Event(e) => {
                            if let Err(err) = sink.event(&defs, &mut diag, e) {
                                return (Err(err), diag);
                            }
                        }
                    }
                }
                let _ = back.try_send(items);
            }
            Msg::Finish => {
                result = sink.finish(&defs, &mut diag);
                break;
            }
        }
    }
    (result, diag)
}

impl Sink for Threaded<'_> {
    fn event(&mut self, defs: &Defs, diag: &mut Diagnostics, event: Event) -> Result<()> {
        if let Some(delta) = defs.delta_since(&mut self.seen) {
            self.batch.push(Item::Defs(Box::new(delta)));
        }
        self.batch.push(Item::Event(event));
        if self.batch.len() >= BATCH {
            self.send(diag)?;
        }
        Ok(())
    }

    fn finish(&mut self, defs: &Defs, diag: &mut Diagnostics) -> Result<()> {
        if let Some(delta) = defs.delta_since(&mut self.seen) {
            self.batch.push(Item::Defs(Box::new(delta)));
        }
        self.send(diag)?;
        let finished = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(Msg::Finish).is_ok());
        let result = self.join(diag);
        if result.is_ok() && !finished {
            return Err(Error::Library("the export thread stopped".into()));
        }
        result
    }

    fn args_read(&self) -> ArgsRead {
        self.args_read
    }

    fn begin_input(&mut self) {
        self.batch.push(Item::Input);
    }

    fn offsets(&mut self, offsets: &[i64]) {
        self.batch.push(Item::Offsets(offsets.to_vec()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::TraceBuilder;

    /// A sink that writes each event with names from the definitions as they are when it gets
    /// it, and the final names at finish.
    #[derive(Default)]
    struct Names {
        lines: Vec<String>,
    }

    impl Sink for Names {
        fn event(&mut self, defs: &Defs, _: &mut Diagnostics, e: Event) -> Result<()> {
            let track = match &e {
                Event::Slice(s) => s.track,
                _ => return Ok(()),
            };
            let t = defs.track_display_name(track);
            let name = match &e {
                Event::Slice(s) => defs.str(s.name).to_string(),
                _ => String::new(),
            };
            self.lines
                .push(format!("{t}: {name} ({} strings)", defs.strings.len()));
            Ok(())
        }
        fn finish(&mut self, defs: &Defs, _: &mut Diagnostics) -> Result<()> {
            for i in 0..defs.tracks.len() {
                self.lines
                    .push(defs.track_display_name(crate::TrackId(i as u32)));
            }
            Ok(())
        }
    }

    /// A sink that reads one arg.
    struct ReadsOne;

    impl Sink for ReadsOne {
        fn event(&mut self, _: &Defs, _: &mut Diagnostics, _: Event) -> Result<()> {
            Ok(())
        }
        fn finish(&mut self, _: &Defs, _: &mut Diagnostics) -> Result<()> {
            Ok(())
        }
        fn args_read(&self) -> ArgsRead {
            ArgsRead::Only(&["one"])
        }
    }

    /// A sink that notes inputs, offsets and events in the order it gets them.
    #[derive(Default)]
    struct Marks(Vec<String>);

    impl Sink for Marks {
        fn event(&mut self, _: &Defs, _: &mut Diagnostics, e: Event) -> Result<()> {
            self.0.push(format!("event {}", e.ts()));
            Ok(())
        }
        fn finish(&mut self, _: &Defs, _: &mut Diagnostics) -> Result<()> {
            self.0.push("finish".into());
            Ok(())
        }
        fn begin_input(&mut self) {
            self.0.push("input".into());
        }
        fn offsets(&mut self, offsets: &[i64]) {
            self.0.push(format!("offsets {offsets:?}"));
        }
    }

    #[test]
    fn inputs_and_offsets_reach_the_sink_between_the_events_they_came_between() {
        let mut sink = Marks::default();
        let mut defs = Defs::new();
        let p = defs.add_process(crate::Process::default());
        let th = defs.add_thread(p, Some(1), None);
        let t = defs.thread(th).track;
        let n = defs.intern("s");
        std::thread::scope(|scope| {
            let mut threaded = Threaded::spawn(scope, &mut sink).unwrap();
            let mut diag = Diagnostics::default();
            let slice = |ts| Event::Slice(crate::Slice::new(t, ts, 1, n));
            threaded.begin_input();
            threaded.event(&defs, &mut diag, slice(5)).unwrap();
            threaded.begin_input();
            threaded.event(&defs, &mut diag, slice(3)).unwrap();
            threaded.offsets(&[0, 7]);
            threaded.finish(&defs, &mut diag).unwrap();
        });
        assert_eq!(
            sink.0,
            [
                "input",
                "event 5",
                "input",
                "event 3",
                "offsets [0, 7]",
                "finish"
            ]
        );
    }

    #[test]
    fn the_args_a_sink_reads_are_known_in_front_of_its_thread() {
        let mut sink = ReadsOne;
        std::thread::scope(|scope| {
            let mut threaded = Threaded::spawn(scope, &mut sink).unwrap();
            let read = threaded.args_read();
            assert_eq!(read, ArgsRead::Only(&["one"]));
            assert!(read.reads("one") && !read.reads("two"));
            assert!(ArgsRead::All.reads("two"));
            let mut diag = Diagnostics::default();
            threaded.finish(&Defs::new(), &mut diag).unwrap();
        });
    }

    /// Names and strings that change between events, over many batches: the sink on its own
    /// thread sees each event as the sink on the pushing thread does.
    #[test]
    fn the_sink_sees_what_it_would_see_in_place() {
        let run = |threaded: bool| -> Vec<String> {
            let mut sink = Names::default();
            let mut defs = Defs::new();
            let mut diag = Diagnostics::default();
            let p = defs.add_process(crate::Process::default());
            let t = defs.add_thread(p, Some(1), None);
            let track = defs.thread(t).track;
            let push = |defs: &mut Defs, diag: &mut Diagnostics, out: &mut dyn Sink, i: usize| {
                if i % 1000 == 0 {
                    let n = defs.intern(&format!("thread renamed at {i}"));
                    defs.set_thread_name(t, n, crate::NamePriority::Explicit);
                }
                let name = defs.intern(&format!("slice {}", i % 3000));
                let e = Event::Slice(crate::Slice {
                    track,
                    ts: i as i64,
                    dur: Some(1),
                    name,
                    cat: None,
                    args: Default::default(),
                    stack: None,
                    color: None,
                    thread_ts: None,
                    thread_dur: None,
                });
                out.event(defs, diag, e).unwrap();
            };
            if threaded {
                std::thread::scope(|s| {
                    let mut th = Threaded::spawn(s, &mut sink).unwrap();
                    for i in 0..20_000 {
                        push(&mut defs, &mut diag, &mut th, i);
                    }
                    th.finish(&defs, &mut diag).unwrap();
                });
            } else {
                for i in 0..20_000 {
                    push(&mut defs, &mut diag, &mut sink, i);
                }
                sink.finish(&defs, &mut diag).unwrap();
            }
            sink.lines
        };
        let (there, here) = (run(true), run(false));
        assert_eq!(there.len(), 20_001);
        assert_eq!(there, here);
    }

    /// An error of the sink comes back, and what it counted reaches the caller.
    #[test]
    fn the_sinks_error_and_diagnostics_come_back() {
        struct Failing;
        impl Sink for Failing {
            fn event(&mut self, _: &Defs, diag: &mut Diagnostics, _: Event) -> Result<()> {
                diag.record(&crate::diag::kinds::OPEN_SLICE, crate::Location::Nowhere);
                Err(Error::Library("disk full".into()))
            }
            fn finish(&mut self, _: &Defs, _: &mut Diagnostics) -> Result<()> {
                Ok(())
            }
        }
        let mut b = TraceBuilder::new();
        let p = b.process(1, "p");
        let t = b.thread(p, 1, "t");
        for i in 0..10_000 {
            b.slice(t, i, 1, "s");
        }
        let crate::mem::Trace { defs, events, .. } = b.finish();
        let mut diag = Diagnostics::default();
        let mut sink = Failing;
        let err = std::thread::scope(|s| {
            let mut th = Threaded::spawn(s, &mut sink).unwrap();
            for e in events {
                th.event(&defs, &mut diag, e)?;
            }
            th.finish(&defs, &mut diag)
        });
        assert!(err.unwrap_err().to_string().contains("disk full"));
        assert_eq!(diag.iter().count(), 1);
    }
}
