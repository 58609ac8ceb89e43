//! IR → Chrome JSON, streamed: events are written as they arrive; names, sort indexes, the stack
//! frame table and samples (which Chrome keeps in top-level keys) are written at `finish`.
//!
//! Output: always the object form, closed, one event per line; integer pids and tids (string or
//! out-of-range ids are remapped and restored on re-import by `tracex_identity` metadata
//! records); `ts`/`dur` in µs with exactly three decimals; slices as `X` (async ones as `b`/`e`
//! with `id2`), instants as `i`, counters as one `C` per timestamp with every series, flows as
//! `s`/`t`/`f`, samples as `stackFrames` + `samples`.

use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use flate2::write::GzEncoder;
use rustc_hash::{FxHashMap, FxHashSet};
use tracex_ir::io::{BackgroundWriter, OutFile, OutputTarget};
use tracex_ir::time::push_micros;
use tracex_ir::{
    Args, CounterId, Defs, Diagnostics, Event, FlowBind, FlowPoint, FlowRole, Instant, Location,
    Num, ProcessId, ProcessKind, Result, Sample, Sink, Slice, StackId, StrId, TrackId, TrackKind,
    Value,
};

use crate::diag as d;
use crate::import::IDENTITY;
use crate::options::ExportOptions;

/// First synthetic pid/tid: far above real Linux ids, readable in a viewer.
const SYNTHETIC_BASE: i64 = 1_000_000_000;

/// The output file, written (and gzip-compressed) on a background thread so that formatting
/// events and writing bytes use both cores.
enum Out {
    Plain(BackgroundWriter<OutFile>),
    Gz(BackgroundWriter<GzEncoder<OutFile>>),
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Out::Plain(w) => w.write(buf),
            Out::Gz(w) => w.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Out::Plain(w) => w.write_all(buf),
            Out::Gz(w) => w.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Plain(w) => w.flush(),
            Out::Gz(w) => w.flush(),
        }
    }
}

impl Out {
    fn commit(self) -> io::Result<()> {
        match self {
            Out::Plain(w) => w.finish()?.commit(),
            Out::Gz(w) => w.finish()?.finish()?.commit(),
        }
    }
}

/// The `C` event being gathered: series of one counter group at one timestamp.
struct PendingCounter {
    key: (Option<ProcessId>, StrId, Option<StrId>, Option<StrId>),
    ts: i64,
    values: Vec<(Option<StrId>, Num)>,
}

pub struct Exporter {
    out: Option<Out>,
    buf: Vec<u8>,
    first_event: bool,
    pids: FxHashMap<ProcessId, i64>,
    used_pids: FxHashSet<i64>,
    next_pid: i64,
    tids: FxHashMap<TrackId, (i64, i64)>,
    used_tids: FxHashSet<(i64, i64)>,
    next_tid: i64,
    /// Processes or threads whose name tracex made up (the input had none): named for viewers,
    /// and marked `unnamed` so a re-import does not take the made-up name.
    made_up_names: FxHashMap<ProcessId, String>,
    made_up_thread_names: FxHashMap<TrackId, String>,
    global_counter_pid: Option<i64>,
    counter: Option<PendingCounter>,
    stacks: FxHashSet<StackId>,
    samples: Option<BufWriter<std::fs::File>>,
    sample_count: u64,
    events: u64,
}

impl Exporter {
    pub fn create(target: &OutputTarget, opts: &ExportOptions) -> Result<Exporter> {
        let file = OutFile::create(target)?;
        let gzip = opts.gzip.unwrap_or_else(|| target.has_suffix(".gz"));
        let mut out = if gzip {
            Out::Gz(BackgroundWriter::new(GzEncoder::new(
                file,
                flate2::Compression::new(opts.gzip_level.min(9)),
            )))
        } else {
            Out::Plain(BackgroundWriter::new(file))
        };
        out.write_all(b"{\"traceEvents\":[\n")?;
        Ok(Exporter {
            out: Some(out),
            buf: Vec::with_capacity(1 << 16),
            first_event: true,
            pids: FxHashMap::default(),
            used_pids: FxHashSet::default(),
            next_pid: SYNTHETIC_BASE,
            tids: FxHashMap::default(),
            used_tids: FxHashSet::default(),
            next_tid: SYNTHETIC_BASE,
            made_up_names: FxHashMap::default(),
            made_up_thread_names: FxHashMap::default(),
            global_counter_pid: None,
            counter: None,
            stacks: FxHashSet::default(),
            samples: None,
            sample_count: 0,
            events: 0,
        })
    }

    /// Starts an event in `buf` (with the separator from the previous one).
    fn begin(&mut self) {
        if !self.first_event {
            self.buf.extend_from_slice(b",\n");
        }
        self.first_event = false;
        self.events += 1;
    }

    fn flush_buf(&mut self) -> Result<()> {
        if self.buf.len() >= 1 << 15 {
            self.out.as_mut().expect("open").write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn synthetic_pid(&mut self) -> i64 {
        while self.used_pids.contains(&self.next_pid) {
            self.next_pid += 1;
        }
        let p = self.next_pid;
        self.next_pid += 1;
        p
    }

    fn synthetic_tid(&mut self, pid: i64) -> i64 {
        while self.used_tids.contains(&(pid, self.next_tid)) {
            self.next_tid += 1;
        }
        let t = self.next_tid;
        self.next_tid += 1;
        t
    }

    /// The exported pid of a process; writes its identity record on first use when needed.
    fn pid_of(&mut self, defs: &Defs, p: ProcessId) -> i64 {
        if let Some(&x) = self.pids.get(&p) {
            return x;
        }
        let proc = defs.process(p);
        let label_int = proc.label.and_then(|l| defs.str(l).parse::<i64>().ok());
        let candidate = proc.os_pid.or(label_int);
        let pid = match candidate {
            Some(c) if (0..=u32::MAX as i64).contains(&c) && !self.used_pids.contains(&c) => c,
            _ => self.synthetic_pid(),
        };
        self.used_pids.insert(pid);
        self.pids.insert(p, pid);
        let device = match proc.kind {
            ProcessKind::Device { device } => Some(device),
            ProcessKind::Host => None,
        };
        if proc.os_pid != Some(pid)
            || proc.label.is_some()
            || device.is_some()
            || proc.host.is_some()
        {
            let mut a = Vec::new();
            a.extend_from_slice(b"{\"pid\":");
            match proc.os_pid {
                Some(x) => a.extend_from_slice(itoa::Buffer::new().format(x).as_bytes()),
                None => a.extend_from_slice(b"null"),
            }
            if let Some(l) = proc.label {
                a.extend_from_slice(b",\"label\":");
                push_str(&mut a, defs.str(l));
            }
            if let Some(dev) = device {
                a.extend_from_slice(b",\"device\":");
                a.extend_from_slice(itoa::Buffer::new().format(dev).as_bytes());
            }
            if let Some(h) = proc.host {
                a.extend_from_slice(b",\"host\":");
                push_str(&mut a, defs.str(h));
            }
            if proc.name.is_none() && proc.os_pid != Some(pid) {
                a.extend_from_slice(b",\"unnamed\":true");
                let shown = match (proc.label, proc.os_pid) {
                    (Some(l), _) => defs.str(l).to_string(),
                    (None, Some(x)) => format!("process {x}"),
                    (None, None) => defs.process_display_name(p),
                };
                self.made_up_names.insert(p, shown);
            }
            a.push(b'}');
            self.meta_event(IDENTITY, pid, None, &a);
        }
        pid
    }

    /// Writes one `M` record with raw JSON args.
    fn meta_event(&mut self, name: &str, pid: i64, tid: Option<i64>, args: &[u8]) {
        self.begin();
        self.buf.extend_from_slice(b"{\"ph\":\"M\",\"name\":");
        push_str(&mut self.buf, name);
        self.buf.extend_from_slice(b",\"pid\":");
        self.buf
            .extend_from_slice(itoa::Buffer::new().format(pid).as_bytes());
        if let Some(t) = tid {
            self.buf.extend_from_slice(b",\"tid\":");
            self.buf
                .extend_from_slice(itoa::Buffer::new().format(t).as_bytes());
        }
        self.buf.extend_from_slice(b",\"args\":");
        self.buf.extend_from_slice(args);
        self.buf.push(b'}');
    }

    /// The exported (pid, tid) of a track; writes identity records on first use when needed.
    fn ids_of(&mut self, defs: &Defs, track: TrackId) -> (i64, i64) {
        if let Some(&x) = self.tids.get(&track) {
            return x;
        }
        let t = defs.track(track);
        let ids = match t.kind {
            TrackKind::Thread(th) => {
                let thread = defs.thread(th);
                let pid = self.pid_of(defs, thread.process);
                let label_int = thread.label.and_then(|l| defs.str(l).parse::<i64>().ok());
                let tid = match thread.os_tid.or(label_int) {
                    Some(c)
                        if (0..=u32::MAX as i64).contains(&c)
                            && !self.used_tids.contains(&(pid, c)) =>
                    {
                        c
                    }
                    _ => self.synthetic_tid(pid),
                };
                if thread.os_tid != Some(tid) || thread.label.is_some() {
                    let mut a = Vec::new();
                    a.extend_from_slice(b"{\"tid\":");
                    match thread.os_tid {
                        Some(x) => a.extend_from_slice(itoa::Buffer::new().format(x).as_bytes()),
                        None => a.extend_from_slice(b"null"),
                    }
                    if let Some(l) = thread.label {
                        a.extend_from_slice(b",\"label\":");
                        push_str(&mut a, defs.str(l));
                    }
                    if thread.name.is_none() && thread.os_tid != Some(tid) {
                        a.extend_from_slice(b",\"unnamed\":true");
                        self.made_up_thread_names
                            .insert(track, defs.track_display_name(track));
                    }
                    a.push(b'}');
                    self.meta_event(IDENTITY, pid, Some(tid), &a);
                }
                (pid, tid)
            }
            TrackKind::GpuStream { device, stream } => {
                let pid = match t.process {
                    Some(p) => self.pid_of(defs, p),
                    None => self.global_pid(defs),
                };
                let tid = if !self.used_tids.contains(&(pid, stream as i64)) {
                    stream as i64
                } else {
                    self.synthetic_tid(pid)
                };
                let mut a = format!("{{\"gpu_stream\":{{\"device\":{device},\"stream\":{stream}}}")
                    .into_bytes();
                if let Some(l) = t.label {
                    a.extend_from_slice(b",\"label\":");
                    push_str(&mut a, defs.str(l));
                }
                if t.name.is_none() {
                    a.extend_from_slice(b",\"unnamed\":true");
                    self.made_up_thread_names
                        .insert(track, defs.track_display_name(track));
                }
                a.push(b'}');
                self.meta_event(IDENTITY, pid, Some(tid), &a);
                (pid, tid)
            }
            TrackKind::Overflow { of, .. }
                if defs.track(defs.root_track(of)).kind == TrackKind::Async =>
            {
                // async lanes are told apart by their id, not by a thread
                self.ids_of(defs, of)
            }
            TrackKind::Overflow { of, level } => {
                let (pid, root_tid) = self.ids_of(defs, of);
                let tid = self.synthetic_tid(pid);
                let a = format!("{{\"overflow_of\":{root_tid},\"level\":{level}}}");
                self.meta_event(IDENTITY, pid, Some(tid), a.as_bytes());
                self.made_up_thread_names
                    .insert(track, defs.track_display_name(track));
                (pid, tid)
            }
            TrackKind::Async | TrackKind::Process => {
                let pid = match t.process {
                    Some(p) => self.pid_of(defs, p),
                    None => self.global_pid(defs),
                };
                // Async and process-scoped events are keyed by pid; tid = pid as for a main thread.
                (pid, pid)
            }
            TrackKind::Global => (0, 0),
        };
        self.used_tids.insert(ids);
        self.tids.insert(track, ids);
        ids
    }

    /// A process for things that have none (global counters).
    fn global_pid(&mut self, _defs: &Defs) -> i64 {
        if let Some(p) = self.global_counter_pid {
            return p;
        }
        let pid = self.synthetic_pid();
        self.used_pids.insert(pid);
        self.global_counter_pid = Some(pid);
        self.meta_event(
            IDENTITY,
            pid,
            None,
            b"{\"pid\":null,\"global\":true,\"unnamed\":true}",
        );
        self.meta_event("process_name", pid, None, b"{\"name\":\"Global\"}");
        pid
    }

    /// `"name":...,"cat":...,"pid":..,"tid":..,"ts":..` common to most events.
    fn head(&mut self, ph: &str, name: Option<&str>, cat: Option<&str>, ids: (i64, i64), ts: i64) {
        self.buf.extend_from_slice(b"{\"ph\":\"");
        self.buf.extend_from_slice(ph.as_bytes());
        self.buf.push(b'"');
        if let Some(n) = name {
            self.buf.extend_from_slice(b",\"name\":");
            push_str(&mut self.buf, n);
        }
        if let Some(c) = cat {
            self.buf.extend_from_slice(b",\"cat\":");
            push_str(&mut self.buf, c);
        }
        self.buf.extend_from_slice(b",\"pid\":");
        self.buf
            .extend_from_slice(itoa::Buffer::new().format(ids.0).as_bytes());
        self.buf.extend_from_slice(b",\"tid\":");
        self.buf
            .extend_from_slice(itoa::Buffer::new().format(ids.1).as_bytes());
        self.buf.extend_from_slice(b",\"ts\":");
        push_micros(&mut self.buf, ts);
    }

    fn tail(
        &mut self,
        defs: &Defs,
        diag: &mut Diagnostics,
        args: &Args,
        stack: Option<StackId>,
        color: Option<StrId>,
    ) {
        if let Some(c) = color {
            self.buf.extend_from_slice(b",\"cname\":");
            push_str(&mut self.buf, defs.str(c));
        }
        if let Some(s) = stack {
            self.stacks.insert(s);
            self.buf.extend_from_slice(b",\"sf\":\"");
            self.buf
                .extend_from_slice(itoa::Buffer::new().format(s.0).as_bytes());
            self.buf.push(b'"');
        }
        if !args.is_empty() {
            self.buf.extend_from_slice(b",\"args\":");
            write_args(&mut self.buf, defs, diag, args);
        }
        self.buf.push(b'}');
    }

    fn slice(&mut self, defs: &Defs, diag: &mut Diagnostics, s: &Slice) {
        let kind = defs.track(s.track).kind;
        let ids = self.ids_of(defs, s.track);
        let name = defs.str(s.name);
        let cat = defs.opt_str(s.cat);
        let is_async = matches!(kind, TrackKind::Async)
            || matches!(kind, TrackKind::Overflow { of, .. } if defs.track(defs.root_track(of)).kind == TrackKind::Async);
        if is_async {
            let id = async_id(defs, s.track);
            self.begin();
            self.head("b", Some(name), cat, ids, s.ts);
            self.buf.extend_from_slice(&id);
            if let Some(t) = s.thread_ts {
                self.buf.extend_from_slice(b",\"tts\":");
                push_micros(&mut self.buf, t);
            }
            self.tail(defs, diag, &s.args, s.stack, s.color);
            if let Some(dur) = s.dur {
                self.begin();
                self.head("e", Some(name), cat, ids, s.ts + dur);
                self.buf.extend_from_slice(&id);
                if let (Some(t), Some(td)) = (s.thread_ts, s.thread_dur) {
                    self.buf.extend_from_slice(b",\"tts\":");
                    push_micros(&mut self.buf, t + td);
                }
                self.buf.push(b'}');
            }
            return;
        }
        self.begin();
        match s.dur {
            Some(dur) => {
                self.head("X", Some(name), cat, ids, s.ts);
                self.buf.extend_from_slice(b",\"dur\":");
                push_micros(&mut self.buf, dur);
            }
            // An open slice stays a B without E, as viewers show "did not end".
            None => self.head("B", Some(name), cat, ids, s.ts),
        }
        if let Some(t) = s.thread_ts {
            self.buf.extend_from_slice(b",\"tts\":");
            push_micros(&mut self.buf, t);
        }
        if let (Some(td), Some(_)) = (s.thread_dur, s.dur) {
            self.buf.extend_from_slice(b",\"tdur\":");
            push_micros(&mut self.buf, td);
        }
        self.tail(defs, diag, &s.args, s.stack, s.color);
    }

    fn instant(&mut self, defs: &Defs, diag: &mut Diagnostics, i: &Instant) {
        let kind = defs.track(i.track).kind;
        let ids = self.ids_of(defs, i.track);
        let name = defs.str(i.name);
        let cat = defs.opt_str(i.cat);
        self.begin();
        match kind {
            TrackKind::Async => {
                self.head("n", Some(name), cat, ids, i.ts);
                let id = async_id(defs, i.track);
                self.buf.extend_from_slice(&id);
            }
            TrackKind::Process => {
                self.head("i", Some(name), cat, ids, i.ts);
                self.buf.extend_from_slice(b",\"s\":\"p\"");
            }
            TrackKind::Global => {
                self.head("i", Some(name), cat, ids, i.ts);
                self.buf.extend_from_slice(b",\"s\":\"g\"");
            }
            _ => {
                self.head("i", Some(name), cat, ids, i.ts);
                self.buf.extend_from_slice(b",\"s\":\"t\"");
            }
        }
        self.tail(defs, diag, &i.args, i.stack, i.color);
    }

    fn flush_counter(&mut self, defs: &Defs, diag: &mut Diagnostics) {
        let Some(c) = self.counter.take() else {
            return;
        };
        let (process, name, label, cat) = c.key;
        let pid = match process {
            Some(p) => self.pid_of(defs, p),
            None => self.global_pid(defs),
        };
        self.begin();
        self.head(
            "C",
            Some(defs.str(name)),
            defs.opt_str(cat),
            (pid, pid),
            c.ts,
        );
        if let Some(l) = label {
            self.buf.extend_from_slice(b",\"id\":");
            push_str(&mut self.buf, defs.str(l));
        }
        self.buf.extend_from_slice(b",\"args\":{");
        for (i, (series, v)) in c.values.iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            push_str(&mut self.buf, series.map_or("value", |s| defs.str(s)));
            self.buf.push(b':');
            match *v {
                Num::Int(x) => self
                    .buf
                    .extend_from_slice(itoa::Buffer::new().format(x).as_bytes()),
                Num::Float(f) if f.is_finite() => self
                    .buf
                    .extend_from_slice(ryu::Buffer::new().format_finite(f).as_bytes()),
                Num::Float(_) => {
                    diag.record(&d::EXPORT_NON_FINITE, Location::Event(self.events));
                    self.buf.extend_from_slice(b"null");
                }
            }
        }
        self.buf.extend_from_slice(b"}}");
    }

    fn counter(
        &mut self,
        defs: &Defs,
        diag: &mut Diagnostics,
        counter: CounterId,
        ts: i64,
        value: Num,
    ) {
        let def = defs.counter(counter);
        let key = (def.process, def.name, def.label, def.cat);
        let series = def.series;
        if let Some(c) = &mut self.counter {
            // one C event per group and timestamp, unless a series repeats
            if c.key == key && c.ts == ts && !c.values.iter().any(|(s, _)| *s == series) {
                c.values.push((series, value));
                return;
            }
        }
        self.flush_counter(defs, diag);
        self.counter = Some(PendingCounter {
            key,
            ts,
            values: vec![(series, value)],
        });
    }

    fn flow(&mut self, defs: &Defs, f: &FlowPoint) {
        let ids = self.ids_of(defs, f.track);
        let ph = match f.role {
            FlowRole::Start => "s",
            FlowRole::Step => "t",
            FlowRole::End => "f",
        };
        self.begin();
        self.head(ph, defs.opt_str(f.name), defs.opt_str(f.cat), ids, f.ts);
        self.buf.extend_from_slice(b",\"id\":");
        self.buf
            .extend_from_slice(itoa::Buffer::new().format(f.id.0).as_bytes());
        if f.role == FlowRole::End && f.bind == FlowBind::Enclosing {
            self.buf.extend_from_slice(b",\"bp\":\"e\"");
        }
        self.buf.push(b'}');
    }

    fn sample(&mut self, defs: &Defs, diag: &mut Diagnostics, s: &Sample) -> Result<()> {
        let ids = self.ids_of(defs, s.track);
        if self.samples.is_none() {
            self.samples = Some(BufWriter::new(tempfile::tempfile()?));
        }
        let mut b = Vec::with_capacity(128);
        if self.sample_count > 0 {
            b.extend_from_slice(b",\n");
        }
        self.sample_count += 1;
        b.extend_from_slice(b"{\"pid\":");
        b.extend_from_slice(itoa::Buffer::new().format(ids.0).as_bytes());
        b.extend_from_slice(b",\"tid\":");
        b.extend_from_slice(itoa::Buffer::new().format(ids.1).as_bytes());
        b.extend_from_slice(b",\"ts\":");
        match s.ts {
            Some(ts) => push_micros(&mut b, ts),
            None => {
                diag.record(&d::EXPORT_UNTIMED_SAMPLE, Location::Nowhere);
                b.push(b'0');
            }
        }
        if let Some(st) = s.stack {
            self.stacks.insert(st);
            b.extend_from_slice(b",\"sf\":\"");
            b.extend_from_slice(itoa::Buffer::new().format(st.0).as_bytes());
            b.push(b'"');
        }
        b.extend_from_slice(b",\"weight\":");
        b.extend_from_slice(itoa::Buffer::new().format(s.weight).as_bytes());
        if let Some(cpu) = s.cpu {
            b.extend_from_slice(b",\"cpu\":");
            b.extend_from_slice(itoa::Buffer::new().format(cpu).as_bytes());
        }
        if let Some(n) = s.name {
            b.extend_from_slice(b",\"name\":");
            push_str(&mut b, defs.str(n));
        }
        b.push(b'}');
        self.samples.as_mut().expect("spool").write_all(&b)?;
        Ok(())
    }

    /// Names, sort indexes and other metadata of every process, thread and track.
    fn write_names(&mut self, defs: &Defs) -> Result<()> {
        for i in 0..defs.processes.len() {
            let p = ProcessId(i as u32);
            let proc = defs.process(p);
            let wanted = proc.name.is_some() || proc.sort_index.is_some() || !proc.meta.is_empty();
            if !wanted && !self.pids.contains_key(&p) {
                continue;
            }
            let pid = self.pid_of(defs, p);
            let proc = defs.process(p);
            let name = proc
                .name
                .map(|n| defs.str(n).to_owned())
                .or_else(|| self.made_up_names.get(&p).cloned());
            if let Some(n) = name {
                let mut a = b"{\"name\":".to_vec();
                push_str(&mut a, &n);
                a.push(b'}');
                self.meta_event("process_name", pid, None, &a);
            }
            let proc = defs.process(p);
            if let Some(si) = proc.sort_index {
                self.meta_event(
                    "process_sort_index",
                    pid,
                    None,
                    format!("{{\"sort_index\":{si}}}").as_bytes(),
                );
            }
            for m in proc.meta.clone() {
                let args = meta_args(defs, &m.value);
                let key = defs.str(m.key).to_owned();
                self.meta_event(&key, pid, None, &args);
            }
            self.flush_buf()?;
        }
        for i in 0..defs.threads.len() {
            let th = &defs.threads[i];
            let track = th.track;
            let wanted = th.name.is_some() || th.sort_index.is_some() || !th.meta.is_empty();
            if !wanted && !self.tids.contains_key(&track) {
                continue;
            }
            let (pid, tid) = self.ids_of(defs, track);
            let th = &defs.threads[i];
            let name = th
                .name
                .map(|n| defs.str(n).to_owned())
                .or_else(|| self.made_up_thread_names.get(&track).cloned());
            let sort = th.sort_index;
            let meta = th.meta.clone();
            if let Some(n) = name {
                let mut a = b"{\"name\":".to_vec();
                push_str(&mut a, &n);
                a.push(b'}');
                self.meta_event("thread_name", pid, Some(tid), &a);
            }
            if let Some(si) = sort {
                self.meta_event(
                    "thread_sort_index",
                    pid,
                    Some(tid),
                    format!("{{\"sort_index\":{si}}}").as_bytes(),
                );
            }
            for m in meta {
                let args = meta_args(defs, &m.value);
                let key = defs.str(m.key).to_owned();
                self.meta_event(&key, pid, Some(tid), &args);
            }
            self.flush_buf()?;
        }
        // Tracks written as threads that are not threads: GPU streams and overflow lanes.
        let mut others: Vec<(TrackId, (i64, i64))> = self
            .tids
            .iter()
            .filter(|(t, _)| {
                matches!(
                    defs.track(**t).kind,
                    TrackKind::GpuStream { .. } | TrackKind::Overflow { .. }
                )
            })
            .map(|(t, ids)| (*t, *ids))
            .collect();
        others.sort();
        for (t, (pid, tid)) in others {
            let track = defs.track(t);
            let name = track
                .name
                .map(|n| defs.str(n).to_owned())
                .or_else(|| self.made_up_thread_names.get(&t).cloned());
            let sort = track.sort_index;
            if let Some(n) = name {
                let mut a = b"{\"name\":".to_vec();
                push_str(&mut a, &n);
                a.push(b'}');
                self.meta_event("thread_name", pid, Some(tid), &a);
            }
            if let Some(si) = sort {
                self.meta_event(
                    "thread_sort_index",
                    pid,
                    Some(tid),
                    format!("{{\"sort_index\":{si}}}").as_bytes(),
                );
            }
        }
        Ok(())
    }

    /// `"stackFrames":{...}` with every referenced stack node and its ancestors.
    fn write_stack_frames(&mut self, defs: &Defs, out: &mut Vec<u8>) {
        let mut all: Vec<StackId> = Vec::new();
        let mut seen: FxHashSet<StackId> = FxHashSet::default();
        for &s in &self.stacks {
            let mut cur = Some(s);
            while let Some(c) = cur {
                if !seen.insert(c) {
                    break;
                }
                all.push(c);
                cur = defs.stacks.node(c).and_then(|n| n.parent);
            }
        }
        all.sort();
        out.extend_from_slice(b",\n\"stackFrames\":{");
        for (i, s) in all.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b",\n");
            }
            out.push(b'"');
            out.extend_from_slice(itoa::Buffer::new().format(s.0).as_bytes());
            out.extend_from_slice(b"\":{\"name\":");
            match defs.stacks.node(*s) {
                Some(n) => {
                    let f = defs.stacks.frame(n.frame);
                    push_str(out, defs.str(f.name));
                    if let Some(m) = f.module {
                        out.extend_from_slice(b",\"category\":");
                        push_str(out, defs.str(m));
                    }
                    if let Some(p) = n.parent {
                        out.extend_from_slice(b",\"parent\":\"");
                        out.extend_from_slice(itoa::Buffer::new().format(p.0).as_bytes());
                        out.push(b'"');
                    }
                }
                None => push_str(out, "?"),
            }
            out.push(b'}');
        }
        out.push(b'}');
    }
}

/// The `"id2"` (or `"id"`, `"scope"`) fields of an async track, from its label; labels written by
/// the Chrome importer round-trip exactly, others become a local string id.
fn async_id(defs: &Defs, track: TrackId) -> Vec<u8> {
    let mut lane = None;
    let mut t = track;
    while let TrackKind::Overflow { of, level } = defs.track(t).kind {
        lane.get_or_insert(level);
        t = of;
    }
    let label = match defs.track(t).label {
        Some(l) => defs.str(l).to_owned(),
        None => format!("\"{}\"", t.0),
    };
    let mut out = Vec::new();
    let mut rest = label.as_str();
    if let Some(after) = rest.strip_prefix("scope:") {
        // the scope ends at the first ':' not escaped as "\:"
        let mut end = None;
        let b = after.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' {
                i += 2;
                continue;
            }
            if b[i] == b':' {
                end = Some(i);
                break;
            }
            i += 1;
        }
        if let Some(e) = end {
            out.extend_from_slice(b",\"scope\":");
            push_str(&mut out, &after[..e].replace("\\:", ":"));
            rest = &after[e + 1..];
        }
    }
    let valid = |raw: &str| {
        serde_json::from_str::<serde_json::Value>(raw)
            .map(|v| v.is_string() || v.is_number())
            .unwrap_or(false)
    };
    let (field, raw) = if let Some(r) = rest.strip_prefix("local:") {
        ("local", r)
    } else if let Some(r) = rest.strip_prefix("global:") {
        ("global", r)
    } else {
        ("id", rest)
    };
    let raw_owned;
    let raw = match lane {
        Some(level) => {
            let base = serde_json::from_str::<serde_json::Value>(raw)
                .ok()
                .map(|v| match v {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                })
                .unwrap_or_else(|| raw.to_string());
            raw_owned = serde_json::to_string(&format!("{base}#lane{level}")).expect("string");
            raw_owned.as_str()
        }
        None if valid(raw) => raw,
        None => {
            raw_owned = serde_json::to_string(raw).expect("string");
            raw_owned.as_str()
        }
    };
    match field {
        "id" => {
            out.extend_from_slice(b",\"id\":");
            out.extend_from_slice(raw.as_bytes());
        }
        f => {
            out.extend_from_slice(b",\"id2\":{\"");
            out.extend_from_slice(f.as_bytes());
            out.extend_from_slice(b"\":");
            out.extend_from_slice(raw.as_bytes());
            out.push(b'}');
        }
    }
    out
}

/// Args of a metadata record: JSON objects as they are, other values wrapped as `{"value": v}`.
fn meta_args(defs: &Defs, v: &Value) -> Vec<u8> {
    match v {
        Value::Json(j) if j.trim_start().starts_with('{') => j.as_bytes().to_vec(),
        other => {
            let mut a = b"{\"value\":".to_vec();
            write_value(&mut a, defs, other);
            a.push(b'}');
            a
        }
    }
}

/// Appends `s` as a JSON string literal.
pub fn push_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let b = s.as_bytes();
    // Most names need no escaping: check all bytes without branching, then copy at once.
    if !b.iter().fold(false, |any, &c| {
        any | (c < 0x20) | (c == b'"') | (c == b'\\')
    }) {
        out.extend_from_slice(b);
        out.push(b'"');
        return;
    }
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                out.extend_from_slice(&b[start..i]);
                out.extend_from_slice(format!("\\u{:04x}", c).as_bytes());
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&b[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

fn write_value(out: &mut Vec<u8>, defs: &Defs, v: &Value) -> bool {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Int(i) => out.extend_from_slice(itoa::Buffer::new().format(*i).as_bytes()),
        Value::UInt(u) => out.extend_from_slice(itoa::Buffer::new().format(*u).as_bytes()),
        Value::Float(f) if f.is_finite() => {
            out.extend_from_slice(ryu::Buffer::new().format_finite(*f).as_bytes())
        }
        Value::Float(_) => {
            out.extend_from_slice(b"null");
            return false;
        }
        Value::Str(s) => push_str(out, s),
        Value::Json(j) => out.extend_from_slice(j.as_bytes()),
    }
    let _ = defs;
    true
}

fn write_args(out: &mut Vec<u8>, defs: &Defs, diag: &mut Diagnostics, args: &Args) {
    out.push(b'{');
    let mut bad = 0;
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_str(out, defs.str(a.key));
        out.push(b':');
        if !write_value(out, defs, &a.value) {
            bad += 1;
        }
    }
    out.push(b'}');
    for _ in 0..bad {
        diag.record(&d::EXPORT_NON_FINITE, Location::Nowhere);
    }
}

impl Sink for Exporter {
    fn event(&mut self, defs: &Defs, diag: &mut Diagnostics, event: Event) -> Result<()> {
        if !matches!(event, Event::Counter(_)) && self.counter.is_some() {
            self.flush_counter(defs, diag);
        }
        match &event {
            Event::Slice(s) => self.slice(defs, diag, s),
            Event::Instant(i) => self.instant(defs, diag, i),
            Event::Counter(c) => self.counter(defs, diag, c.counter, c.ts, c.value),
            Event::Flow(f) => self.flow(defs, f),
            Event::Sample(s) => self.sample(defs, diag, s)?,
        }
        self.flush_buf()
    }

    fn finish(&mut self, defs: &Defs, diag: &mut Diagnostics) -> Result<()> {
        self.flush_counter(defs, diag);
        self.write_names(defs)?;
        let mut out = self.out.take().expect("finish once");
        out.write_all(&self.buf)?;
        self.buf.clear();
        let mut tail: Vec<u8> = b"\n]".to_vec();
        let reserved = [
            "traceEvents",
            "stackFrames",
            "samples",
            "baseTimeNanoseconds",
        ];
        for m in &defs.meta {
            let key = defs.str(m.key);
            if reserved.contains(&key) {
                continue;
            }
            tail.extend_from_slice(b",\n");
            push_str(&mut tail, key);
            tail.push(b':');
            write_value(&mut tail, defs, &m.value);
        }
        if let Some(o) = defs.clock.origin_unix_ns {
            tail.extend_from_slice(b",\n\"baseTimeNanoseconds\":");
            tail.extend_from_slice(itoa::Buffer::new().format(o).as_bytes());
        }
        if !self.stacks.is_empty() {
            self.write_stack_frames(defs, &mut tail);
        }
        out.write_all(&tail)?;
        if let Some(spool) = self.samples.take() {
            let mut f = spool.into_inner().map_err(|e| e.into_error())?;
            f.seek(SeekFrom::Start(0))?;
            out.write_all(b",\n\"samples\":[\n")?;
            let mut chunk = vec![0u8; 1 << 20];
            loop {
                let n = f.read(&mut chunk)?;
                if n == 0 {
                    break;
                }
                out.write_all(&chunk[..n])?;
            }
            out.write_all(b"\n]")?;
        }
        out.write_all(b"}\n")?;
        out.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        let mut v = Vec::new();
        push_str(&mut v, "a\"b\\c\nd\u{1}é");
        assert_eq!(String::from_utf8(v).unwrap(), "\"a\\\"b\\\\c\\nd\\u0001é\"");
    }
}
