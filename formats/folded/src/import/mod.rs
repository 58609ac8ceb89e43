//! Folded text → IR, line by line.
//!
//! Plain lines become untimed aggregate samples (`ts: None`) on one thread of one process: a
//! folded file has no time and no threads (root frames such as austin's `P6360;T6360` stay
//! frames). Extended lines become timed samples on the thread `(pid, tid)`, named after `comm`.
//! Stacks go into the prefix tree exactly as written: no frame is cleaned up here.

mod ahead;
pub mod extended;
pub mod plain;

use std::io::Read;

use rustc_hash::FxHashMap;
use tracex_ir::{
    DiagKind, Event, ImportCtx, Location, NamePriority, Process, ProcessId, Result, Sample,
    StackId, TrackId,
};

use crate::diag as d;
use crate::differential::{DIFF_AFTER, DIFF_BEFORE};
use crate::options::ImportOptions;
use ahead::Kind;

/// Reads folded stacks from `reader` into `ctx`: the lines are read and parsed on a thread of
/// their own ([`ahead`]).
pub fn import<R: Read + Send>(reader: R, opts: &ImportOptions, ctx: &mut ImportCtx) -> Result<()> {
    let mut imp = Importer::default();
    ahead::lines(reader, opts.dialect, |line, text| imp.line(ctx, line, text))
}

#[derive(Default)]
struct Importer {
    /// The one thread of a plain folded file.
    plain_track: Option<TrackId>,
    processes: FxHashMap<i64, ProcessId>,
    threads: FxHashMap<(i64, i64), TrackId>,
    /// Extended files repeat few stacks many times: the stack of each distinct text.
    stack_cache: FxHashMap<String, StackId>,
}

/// A short excerpt of a bad line for the diagnostic.
fn excerpt(line: &str) -> String {
    let mut s: String = line.chars().take(60).collect();
    if s.len() < line.len() {
        s.push('…');
    }
    s
}

impl Importer {
    fn note(ctx: &mut ImportCtx, kind: &'static DiagKind, no: u64) {
        ctx.diag.record(kind, Location::Line(no));
    }

    /// A line as read ahead; `text` holds its parts.
    fn line(&mut self, ctx: &mut ImportCtx, line: &ahead::Line, text: &str) -> Result<()> {
        let no = line.no;
        if line.ansi {
            Self::note(ctx, &d::EXT_ANSI_STRIPPED, no);
        }
        let t = &text[line.text.clone()];
        match &line.kind {
            Kind::NotText => Self::note(ctx, &d::NOT_TEXT, no),
            Kind::Blank => Self::note(ctx, &d::BLANK_LINE, no),
            Kind::Comment => Self::note(ctx, &d::COMMENT_LINE, no),
            Kind::Plain { stack, counts } => {
                return self.plain(ctx, no, &text[stack.clone()], *counts)
            }
            Kind::PlainBad(kind) => ctx.diag.record_detail(kind, Location::Line(no), excerpt(t)),
            Kind::Extended(fields) => return self.extended(ctx, fields.line(text)),
            Kind::ExtendedBad(kind, why) => ctx.diag.record_detail(
                kind,
                Location::Line(no),
                format!("{why} in {:?}", excerpt(t)),
            ),
            Kind::Unparsed => unreachable!("`ahead::lines` parses every line it hands on"),
        }
        Ok(())
    }

    fn plain(
        &mut self,
        ctx: &mut ImportCtx,
        no: u64,
        stack_text: &str,
        counts: plain::Counts,
    ) -> Result<()> {
        let track = match self.plain_track {
            Some(t) => t,
            None => {
                let p = ctx.defs.add_process(Process::default());
                let th = ctx.defs.add_thread(p, None, None);
                let t = ctx.defs.thread(th).track;
                self.plain_track = Some(t);
                t
            }
        };
        let stack = if stack_text.is_empty() {
            Self::note(ctx, &d::EMPTY_STACK, no);
            None
        } else {
            Some(intern_stack(ctx, stack_text))
        };
        if counts.truncated {
            Self::note(ctx, &d::FRACTIONAL_COUNT, no);
        }
        if counts.last == 0 && counts.before.unwrap_or(0) == 0 {
            Self::note(ctx, &d::ZERO_COUNT, no);
        }
        let emit = |ctx: &mut ImportCtx, weight: i64, name: Option<&str>| {
            let name = name.map(|n| ctx.defs.intern(n));
            ctx.emit(Event::Sample(Sample {
                track,
                ts: None,
                stack,
                weight,
                cpu: None,
                name,
            }))
        };
        match counts.before {
            Some(before) => {
                Self::note(ctx, &d::DIFFERENTIAL, no);
                emit(ctx, before, Some(DIFF_BEFORE))?;
                emit(ctx, counts.last, Some(DIFF_AFTER))
            }
            None => emit(ctx, counts.last, None),
        }
    }

    fn extended(&mut self, ctx: &mut ImportCtx, l: extended::ExtLine) -> Result<()> {
        // The profiler writes Unix-epoch nanoseconds.
        if ctx.defs.clock.origin_unix_ns.is_none() {
            ctx.defs.clock.origin_unix_ns = Some(0);
        }
        let track = self.thread_track(ctx, l.pid, l.tid, l.comm);
        let stack = match self.stack_cache.get(l.stack) {
            Some(&s) => s,
            None => {
                let s = intern_stack(ctx, l.stack);
                self.stack_cache.insert(l.stack.to_string(), s);
                s
            }
        };
        ctx.emit(Event::Sample(Sample {
            track,
            ts: Some(l.ts),
            stack: Some(stack),
            weight: 1,
            cpu: Some(l.cpu),
            name: None,
        }))
    }

    fn thread_track(&mut self, ctx: &mut ImportCtx, pid: i64, tid: i64, comm: &str) -> TrackId {
        if let Some(&t) = self.threads.get(&(pid, tid)) {
            return t;
        }
        let name = ctx.defs.intern(comm);
        let p = *self.processes.entry(pid).or_insert_with(|| {
            let p = ctx.defs.add_process(Process {
                os_pid: Some(pid),
                ..Process::default()
            });
            ctx.defs.set_process_name(p, name, NamePriority::Inferred);
            p
        });
        let th = ctx.defs.add_thread(p, Some(tid), None);
        ctx.defs.set_thread_name(th, name, NamePriority::Inferred);
        let t = ctx.defs.thread(th).track;
        self.threads.insert((pid, tid), t);
        t
    }
}

/// The stack of `text` (`frame;frame;leaf`, root first) in the prefix tree. Frames are kept
/// verbatim, empty ones included, so that writing the stack back gives the same text.
fn intern_stack(ctx: &mut ImportCtx, text: &str) -> StackId {
    let mut cur = None;
    for frame in text.split(';') {
        let name = ctx.defs.intern(frame);
        let f = ctx.defs.stacks.intern_frame(name, None);
        cur = Some(ctx.defs.stacks.intern(cur, f));
    }
    cur.expect("split yields at least one frame")
}
