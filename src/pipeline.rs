//! The conversion pipeline: importers push into an optional reorder stage, then the overlap
//! router, then the filters, then the sink (an exporter, or a command's own sink). Several
//! inputs become one timeline: each keeps its own processes and ids, and is moved in time so
//! that the inputs line up on their clocks (or on their first events).

use anyhow::Context;
use tracex_ir::format::{Format, InputKind, Options};
use tracex_ir::nest::{FlowBinder, OverlapRouter};
use tracex_ir::order::Sorter;
use tracex_ir::time::UNIX_SCALE_NS;
use tracex_ir::{
    ArgsRead, Defs, Diagnostics, Event, EventOrder, ImportCtx, Location, NamePriority, Sink, Stage,
};

use crate::filter::{Filter, FilterSpec};
use crate::input::Input;

tracex_ir::kinds! {
    MERGE_UNALIGNED = "merge_unaligned", Warning,
        "merging inputs on their clocks, some input has no absolute clock origin (and its timestamps do not look like Unix time): it was lined up on its first event with the earliest input instead";
}

/// An input with the format chosen for it.
pub struct Opened {
    pub input: Input,
    pub format: &'static Format,
}

/// How several inputs are lined up in time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Align {
    /// On their absolute clocks (nsys session start, Chrome baseTimeNanoseconds, OTF2 clock
    /// properties, or Unix-time timestamps)
    #[default]
    Clock,
    /// Each input's first event at the first input's first event
    Start,
}

/// Whether the events must be reordered: any unsorted importer, or several inputs.
pub fn needs_sort(sources: &[Opened]) -> bool {
    sources.len() > 1
        || sources
            .iter()
            .any(|s| s.format.import.as_ref().map(|i| i.order) != Some(EventOrder::Sorted))
}

/// The sink, behind the filters when there are any.
pub enum Tail<'a> {
    Sink(&'a mut dyn Sink),
    Filtered(Box<Filter<&'a mut dyn Sink>>),
}

impl Stage for Tail<'_> {
    fn push(&mut self, defs: &mut Defs, diag: &mut Diagnostics, e: Event) -> tracex_ir::Result<()> {
        match self {
            Tail::Sink(s) => s.push(defs, diag, e),
            Tail::Filtered(f) => f.push(defs, diag, e),
        }
    }
    fn end(&mut self, defs: &mut Defs, diag: &mut Diagnostics) -> tracex_ir::Result<()> {
        match self {
            Tail::Sink(s) => s.end(defs, diag),
            Tail::Filtered(f) => f.end(defs, diag),
        }
    }
}

/// The stages in front of a sink, which they borrow: the caller reads its sink afterwards.
pub enum Chain<'a> {
    Direct(OverlapRouter<FlowBinder<Tail<'a>>>),
    Sorted(Box<Sorter<OverlapRouter<FlowBinder<Tail<'a>>>>>),
    /// Straight to a sink that took its events unordered ([`Sink::unordered`]).
    Unordered(Unordered<'a>),
}

/// The events of every input as they arrive, with each input's earliest time (which lines the
/// inputs up, as the sorter's does).
pub struct Unordered<'a> {
    sink: &'a mut dyn Sink,
    first_ts: Vec<Option<i64>>,
}

impl Unordered<'_> {
    fn begin_input(&mut self) {
        self.first_ts.push(None);
        self.sink.begin_input();
    }
}

impl<'a> Chain<'a> {
    /// The chain in front of `sink`: with `unordered`, the sink has agreed to take its events
    /// unordered ([`Sink::unordered`]) and there is no filter.
    pub fn new(
        sink: &'a mut dyn Sink,
        sort: bool,
        mem_budget: usize,
        filter: FilterSpec,
        unordered: bool,
    ) -> Self {
        if unordered {
            debug_assert!(filter.is_empty(), "filters need the total order");
            return Chain::Unordered(Unordered {
                sink,
                first_ts: Vec::new(),
            });
        }
        let tail = if filter.is_empty() {
            Tail::Sink(sink)
        } else {
            Tail::Filtered(Box::new(Filter::new(sink, filter)))
        };
        let routed = OverlapRouter::new(FlowBinder::new(tail));
        if sort {
            Chain::Sorted(Box::new(Sorter::with_budget(routed, mem_budget)))
        } else {
            Chain::Direct(routed)
        }
    }
}

impl Stage for Chain<'_> {
    fn push(&mut self, defs: &mut Defs, diag: &mut Diagnostics, e: Event) -> tracex_ir::Result<()> {
        match self {
            Chain::Direct(s) => s.push(defs, diag, e),
            Chain::Sorted(s) => s.push(defs, diag, e),
            Chain::Unordered(u) => {
                if let Some(first) = u.first_ts.last_mut() {
                    tracex_ir::order::note_start(first, &e);
                }
                u.sink.event(defs, diag, e)
            }
        }
    }
    fn end(&mut self, defs: &mut Defs, diag: &mut Diagnostics) -> tracex_ir::Result<()> {
        match self {
            Chain::Direct(s) => s.end(defs, diag),
            Chain::Sorted(s) => s.end(defs, diag),
            Chain::Unordered(u) => u.sink.finish(defs, diag),
        }
    }
}

/// Runs every importer into `chain` (without finishing it), telling them the args its sink
/// reads. With several inputs, each input's processes are tagged with the input's name as
/// their host (when the input names none), and the inputs are aligned in time as `align` says.
pub fn import_all(
    sources: &mut [Opened],
    opts: &Options,
    defs: &mut Defs,
    diag: &mut Diagnostics,
    (chain, args_read): (&mut Chain<'_>, ArgsRead),
    align: Align,
) -> anyhow::Result<()> {
    let several = sources.len() > 1;
    let mut origins = Vec::new();
    for s in sources.iter_mut() {
        match chain {
            Chain::Sorted(sorter) => sorter.begin_input(),
            Chain::Unordered(u) => u.begin_input(),
            Chain::Direct(_) => {}
        }
        let import = s.format.import.as_ref().expect("importable format");
        if import.input == InputKind::File {
            // stdin and gzip input become a temporary file before the importer opens it
            s.input.file_path().with_context(|| {
                format!(
                    "{}: cannot copy the input to a temporary file",
                    s.input.display
                )
            })?;
        }
        let progress = s.input.progress.clone();
        let first_process = defs.processes.len();
        defs.clock.origin_unix_ns = None;
        {
            let mut ctx = ImportCtx::new(defs, diag, chain, &progress).reading_args(args_read);
            (import.run)(&mut s.input, opts, &mut ctx)
                .with_context(|| format!("{} ({})", s.input.display, s.format.name))?;
        }
        origins.push(defs.clock.origin_unix_ns);
        if several {
            label_processes(defs, first_process, &s.input.display);
        }
    }
    if several {
        // several inputs are always reordered, or taken unordered
        let first = match chain {
            Chain::Sorted(sorter) => Some(sorter.first_ts()),
            Chain::Unordered(u) => Some(&u.first_ts[..]),
            Chain::Direct(_) => None,
        };
        if let Some(first) = first {
            let (offsets, origin) = offsets(&origins, first, align, diag);
            defs.clock.origin_unix_ns = origin;
            match chain {
                Chain::Sorted(sorter) => sorter.set_offsets(offsets),
                Chain::Unordered(u) => u.sink.offsets(&offsets),
                Chain::Direct(_) => {}
            }
        }
    } else {
        defs.clock.origin_unix_ns = origins.first().copied().flatten();
    }
    Ok(())
}

/// Names the processes of one of several inputs after it: host = the input's file name, and the
/// process name prefixed with it, so ranks stay apart in every viewer.
fn label_processes(defs: &mut Defs, from: usize, input: &str) {
    let stem = std::path::Path::new(input)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| input.to_string());
    let host = defs.intern(&stem);
    for i in from..defs.processes.len() {
        let id = tracex_ir::ProcessId(i as u32);
        if defs.process(id).host.is_none() {
            defs.process_mut(id).host = Some(host);
        }
        let shown = format!("[{stem}] {}", defs.process_display_name(id));
        let name = defs.intern(&shown);
        let prio = defs.process(id).name_priority.max(NamePriority::Inferred);
        defs.set_process_name(id, name, prio);
    }
}

/// Per-input time offsets and the merged trace's clock origin.
fn offsets(
    origins: &[Option<i64>],
    first: &[Option<i64>],
    align: Align,
    diag: &mut Diagnostics,
) -> (Vec<i64>, Option<i64>) {
    let first_of = |i: usize| first.get(i).copied().flatten();
    match align {
        Align::Start => {
            let base = first_of(0).unwrap_or(0);
            let offs = (0..origins.len())
                .map(|i| first_of(i).map_or(0, |f| base - f))
                .collect();
            (offs, origins.first().copied().flatten())
        }
        Align::Clock => {
            // an input without an origin whose times look like Unix time is on the Unix clock
            // (Kineto and CUPTI write epoch times without saying so)
            let origins: Vec<Option<i64>> = origins
                .iter()
                .enumerate()
                .map(|(i, o)| o.or_else(|| first_of(i).filter(|&f| f > UNIX_SCALE_NS).map(|_| 0)))
                .collect();
            let Some(common) = origins.iter().flatten().min().copied() else {
                // no clock known anywhere: the inputs share their (unknown) time base
                return (vec![0; origins.len()], None);
            };
            // the earliest absolute start among the inputs with a clock
            let earliest = origins
                .iter()
                .enumerate()
                .filter_map(|(i, o)| Some(o.as_ref()? - common + first_of(i)?))
                .min();
            let offs = origins
                .iter()
                .enumerate()
                .map(|(i, o)| match o {
                    Some(o) => o - common,
                    None => {
                        diag.record(&MERGE_UNALIGNED, Location::Nowhere);
                        match (earliest, first_of(i)) {
                            (Some(e), Some(f)) => e - f,
                            _ => 0,
                        }
                    }
                })
                .collect();
            (offs, Some(common))
        }
    }
}

/// Parses a size like `512M`, `2G`, `100k` or a plain byte count.
pub fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim();
    let (num, mul) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => {
            let mul = match t[i..].to_ascii_lowercase().trim_end_matches(['b', 'i']) {
                "" => 1,
                "k" => 1 << 10,
                "m" => 1 << 20,
                "g" => 1 << 30,
                _ => return None,
            };
            (&t[..i], mul)
        }
        None => (t, 1),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mul)
}
