//! Pass 2: packets → IR events.

use rustc_hash::{FxHashMap, FxHashSet};
use tracex_ir::diag::kinds as ir_kinds;
use tracex_ir::{
    Args, Defs, Diagnostics, Event, FlowBind, FlowRole, ImportCtx, Instant, Location, Num,
    ProcessId, Result, Sample, Slice, StackId, StrId, Track, TrackId, TrackKind, Value,
};

use super::android::{Android, Out};
use super::args::{self, Lost};
use super::clock::{Clocks, BOOTTIME, MONOTONIC};
use super::flows::{FlowPoints, How, Key, Pt};
use super::ordered::{End, Kept, Rec, TimeOrdered};
use super::runs::Sorted;
use super::sequence::{flags, Sequence};
use super::tally::Tally;
use super::tracks::{Target, TrackMap};
use crate::diag as d;
use crate::pb::trace_packet::Data;
use crate::pb::tracex::{flow_point::Role, Extra, FlowPoint as XFlow};
use crate::pb::track_event::legacy_event::{FlowDirection, Id as LegacyId, InstantEventScope};
use crate::pb::track_event::{self as te_pb, CounterValueField, LegacyEvent, NameField};
use crate::pb::{self, TracePacket, TrackEvent};

pub struct State {
    pub tracks: TrackMap,
    /// Track uuids written by several sequences: their begins and ends (and those of legacy
    /// async tracks and atrace markers) are matched in time order at the end, file order is not
    /// time order across writers.
    shared: FxHashSet<u64>,
    ordered: TimeOrdered,
    pub clocks: Clocks,
    /// The trace was written by tracex: its extension is present.
    pub tracex: bool,
    /// IR time = trace time + offset.
    pub offset: i64,
    slices: OpenSlices,
    flows: FlowPoints,
    lost: Lost,
    unmapped: Tally,
    bookkeeping: Tally,
    typed: Tally,
    events_unmapped: Tally,
    pub android: Android,
    legacy_async: FxHashMap<(Option<ProcessId>, u64, StrId), TrackId>,
    /// The name and category of flows whose points give none (tracex's trace record).
    pub flow_default: Option<(Option<StrId>, Option<StrId>)>,
}

/// Packet kinds about the recording rather than its content.
const BOOKKEEPING: &[&str] = &[
    "trace_config",
    "trace_stats",
    "service_event",
    "system_info",
    "trace_uuid",
    "synchronization_marker",
    "extension_descriptor",
    "ftrace_stats",
    "trace_provenance",
    "protovms",
    "clock_snapshot",
];

fn role(r: Option<i32>) -> Option<FlowRole> {
    match r.and_then(|r| Role::try_from(r).ok())? {
        Role::Start => Some(FlowRole::Start),
        Role::Step => Some(FlowRole::Step),
        Role::End => Some(FlowRole::End),
    }
}

/// Names of the packet payloads tracex skips, by `TracePacket` field number, for the tally of
/// what was skipped (the schema in `proto/` declares only what tracex maps; others are named
/// "field N").
const SKIPPED_KINDS: &[(u32, &str)] = &[
    (1, "ftrace_events"),
    (2, "process_tree"),
    (4, "inode_file_map"),
    (7, "sys_stats"),
    (9, "process_stats"),
    (33, "trace_config"),
    (34, "ftrace_stats"),
    (35, "trace_stats"),
    (36, "synchronization_marker"),
    (37, "profile_packet"),
    (38, "battery"),
    (39, "android_log"),
    (40, "power_rails"),
    (45, "system_info"),
    (46, "trigger"),
    (47, "packages_list"),
    (48, "chrome_benchmark_metadata"),
    (49, "perfetto_metatrace"),
    (51, "chrome_metadata"),
    (52, "gpu_counter_event"),
    (53, "gpu_render_stage_event"),
    (57, "graphics_frame_event"),
    (61, "module_symbols"),
    (62, "vulkan_memory_event"),
    (63, "gpu_log"),
    (65, "vulkan_api_event"),
    (67, "cpu_info"),
    (68, "smaps_packet"),
    (69, "service_event"),
    (71, "gpu_mem_total_event"),
    (72, "extension_descriptor"),
    (74, "streaming_allocation"),
    (75, "streaming_free"),
    (84, "statsd_atom"),
    (89, "trace_uuid"),
    (91, "entity_state_residency"),
    (95, "etw_events"),
    (124, "trace_provenance"),
    (125, "protovms"),
];

/// The name of a skipped packet payload field.
fn kind_name(field: u32) -> String {
    match SKIPPED_KINDS.iter().find(|(f, _)| *f == field) {
        Some((_, name)) => (*name).to_owned(),
        None => format!("field {field}"),
    }
}

impl State {
    pub fn new(tracks: TrackMap, clocks: Clocks, shared: FxHashSet<u64>) -> State {
        State {
            tracks,
            shared,
            ordered: TimeOrdered::default(),
            clocks,
            tracex: false,
            offset: 0,
            slices: OpenSlices::default(),
            flows: FlowPoints::default(),
            lost: Lost::default(),
            unmapped: Tally::default(),
            bookkeeping: Tally::default(),
            typed: Tally::default(),
            events_unmapped: Tally::default(),
            android: Android::default(),
            legacy_async: FxHashMap::default(),
            flow_default: None,
        }
    }

    /// IR time of a trace-clock time, if it fits.
    fn ir_time(&self, trace: i128) -> Option<i64> {
        i64::try_from(trace + self.offset as i128).ok()
    }

    /// The packet's timestamp in IR time: `Ok(None)` without one; an error diagnostic when it
    /// cannot be converted.
    fn packet_time(
        &self,
        seq: &mut Sequence,
        p: &TracePacket,
    ) -> std::result::Result<Option<i64>, &'static tracex_ir::DiagKind> {
        let Some(ts) = p.timestamp else {
            return Ok(None);
        };
        let clock = p
            .timestamp_clock_id
            .or(seq.defaults.as_ref().and_then(|d| d.timestamp_clock_id))
            .unwrap_or(BOOTTIME);
        let trace = seq
            .clocks
            .convert(&self.clocks, clock, ts)
            .ok_or(&d::IMPORT_UNKNOWN_CLOCK)?;
        self.ir_time(trace)
            .map(Some)
            .ok_or(&d::IMPORT_BAD_TIMESTAMP)
    }

    pub fn packet(
        &mut self,
        ctx: &mut ImportCtx,
        seq: &mut Sequence,
        at: u64,
        p: TracePacket,
        unknown: Vec<u32>,
    ) -> Result<()> {
        let (cleared, needs) = flags(&p);
        if cleared {
            seq.clear();
        } else if p.previous_packet_dropped.unwrap_or(0) != 0 {
            seq.valid = false;
            ctx.diag.record(&d::IMPORT_DATA_LOSS, Location::Byte(at));
        }
        if let Some(defaults) = &p.trace_packet_defaults {
            seq.defaults = Some((**defaults).clone());
        }
        if let Some(i) = &p.interned_data {
            seq.intern(ctx.defs, i);
        }
        if let Some(Data::ClockSnapshot(s)) = &p.data {
            seq.clocks.learn(s, &self.clocks);
            return Ok(());
        }
        if needs && !seq.valid {
            ctx.diag
                .record(&d::IMPORT_INVALID_STATE, Location::Byte(at));
            return Ok(());
        }
        let timed = matches!(
            p.data,
            Some(Data::TrackEvent(_)) | Some(Data::StackSample(_)) | Some(Data::PerfSample(_))
        );
        let ts = match self.packet_time(seq, &p) {
            Ok(ts) => ts,
            Err(kind) if timed => {
                ctx.diag.record(kind, Location::Byte(at));
                return Ok(());
            }
            Err(_) => None,
        };
        let TracePacket { data, tracex, .. } = p;
        let tracex = tracex.map(|x| *x);
        match data {
            Some(Data::TrackEvent(te)) => self.track_event(ctx, seq, at, ts, tracex, *te),
            Some(Data::StackSample(s)) => self.stack_sample(ctx, seq, at, ts, tracex, *s),
            Some(Data::PerfSample(s)) => {
                let stack = s.callstack_iid.and_then(|c| self.stack(ctx.defs, seq, c));
                self.sample(
                    ctx,
                    at,
                    ts,
                    s.pid.map(i64::from),
                    s.tid.map(i64::from),
                    stack,
                    1,
                    s.cpu,
                    None,
                );
                Ok(())
            }
            Some(Data::StreamingProfilePacket(s)) => {
                self.streaming_samples(ctx, seq, at, s);
                Ok(())
            }
            Some(Data::ThreadDescriptor(td)) => {
                let t = self.tracks.thread_by_tid(
                    ctx.defs,
                    td.pid.unwrap_or(0) as i64,
                    td.tid.unwrap_or(0),
                );
                if let Some(n) = &td.thread_name {
                    let n = ctx.defs.intern(n);
                    ctx.defs
                        .set_thread_name(t, n, tracex_ir::NamePriority::Explicit);
                }
                seq.legacy_ts = td.reference_timestamp_us.map(|u| u as i128 * 1000);
                seq.legacy_thread_time = td.reference_thread_time_us.map(|u| u * 1000);
                seq.legacy_sample_us = td.reference_timestamp_us;
                seq.thread = Some(td);
                Ok(())
            }
            Some(Data::ProcessDescriptor(pd)) => {
                let p = self
                    .tracks
                    .process_by_pid(ctx.defs, pd.pid.unwrap_or(0) as i64);
                if let Some(n) = &pd.process_name {
                    let n = ctx.defs.intern(n);
                    ctx.defs
                        .set_process_name(p, n, tracex_ir::NamePriority::Explicit);
                }
                Ok(())
            }
            // a thread's descriptor on a sequence makes it the sequence's thread, as the legacy
            // thread descriptor does (the rest was read in the first pass)
            Some(Data::TrackDescriptor(td)) => {
                if let (Some(thread), true) = (td.thread, seq.valid) {
                    seq.legacy_ts = Some(thread.reference_timestamp_us.unwrap_or(0) as i128 * 1000);
                    seq.legacy_thread_time =
                        Some(thread.reference_thread_time_us.unwrap_or(0) * 1000);
                    seq.thread = Some(thread);
                }
                Ok(())
            }
            Some(Data::TraceAttributes(_)) => Ok(()),
            Some(Data::FtraceEvents(bundle)) => {
                let offset = self.offset;
                let (android, mut out, clocks) = self.android();
                let mut time = |clock, ts| {
                    let trace = seq.clocks.convert(clocks, clock, ts)?;
                    i64::try_from(trace + offset as i128).ok()
                };
                android.ftrace(ctx, &mut out, &mut time, at, &bundle)
            }
            Some(Data::ProcessTree(tree)) => {
                let (android, mut out, _) = self.android();
                android.process_tree(ctx, &mut out, &tree);
                Ok(())
            }
            Some(Data::GpuCounterEvent(e)) => self.android.gpu_counters(ctx, seq, ts, &e),
            #[allow(deprecated)]
            Some(Data::ChromeEvents(bundle)) => {
                if !bundle.trace_events.is_empty() {
                    self.unmapped
                        .add("chrome_events.trace_events", Location::Byte(at));
                }
                if !bundle.legacy_json_trace.is_empty() {
                    self.unmapped
                        .add("chrome_events.legacy_json_trace", Location::Byte(at));
                }
                if !bundle.legacy_ftrace_output.is_empty() {
                    self.unmapped
                        .add("chrome_events.legacy_ftrace_output", Location::Byte(at));
                }
                Ok(())
            }
            Some(Data::ZstdCompressedPackets(_)) => {
                ctx.diag.record(&d::IMPORT_ZSTD, Location::Byte(at));
                Ok(())
            }
            // clock snapshots were read above; deflated packets expanded by the reader
            Some(Data::ClockSnapshot(_)) | Some(Data::CompressedPackets(_)) => Ok(()),
            None => {
                if let Some(x) = tracex {
                    self.detached_flows(ctx, seq, ts, &x)?;
                }
                for field in unknown {
                    let name = kind_name(field);
                    if BOOKKEEPING.contains(&name.as_str()) {
                        self.bookkeeping.add(name, Location::Byte(at));
                    } else {
                        self.unmapped.add(name, Location::Byte(at));
                    }
                }
                Ok(())
            }
        }
    }

    /// The IR stack of an interned callstack (missing ones counted).
    fn stack(&mut self, defs: &mut Defs, seq: &mut Sequence, iid: u64) -> Option<StackId> {
        match seq.stack(defs, iid) {
            Some(s) => s,
            None => {
                self.lost.missing_iids += 1;
                None
            }
        }
    }

    fn inline_stack(
        &self,
        defs: &mut Defs,
        frames: &[pb::inline_callstack::Frame],
    ) -> Option<StackId> {
        let ids: Vec<_> = frames
            .iter()
            .map(|f| {
                let name = defs.intern(f.function_name.as_deref().unwrap_or("?"));
                let module = f.source_file.as_deref().map(|s| defs.intern(s));
                defs.stacks.intern_frame(name, module)
            })
            .collect();
        defs.stacks.intern_path(ids)
    }

    /// A name or category by iid, or inline.
    fn interned(&mut self, defs: &mut Defs, table: &FxHashMap<u64, StrId>, iid: u64) -> StrId {
        match table.get(&iid) {
            Some(&s) => s,
            None => {
                self.lost.missing_iids += 1;
                defs.intern(&format!("unknown({iid})"))
            }
        }
    }

    fn event_name(&mut self, defs: &mut Defs, seq: &Sequence, te: &TrackEvent) -> StrId {
        let legacy = te.legacy_event.as_ref().and_then(|l| l.name_iid);
        match (&te.name_field, legacy) {
            (Some(NameField::Name(n)), _) => defs.intern(n),
            (Some(NameField::NameIid(i)), _) => self.interned(defs, &seq.names, *i),
            (None, Some(i)) => self.interned(defs, &seq.names, i),
            (None, None) => StrId::EMPTY,
        }
    }

    fn event_category(
        &mut self,
        defs: &mut Defs,
        seq: &Sequence,
        te: &TrackEvent,
    ) -> Option<StrId> {
        if te.category_iids.len() == 1 && te.categories.is_empty() {
            return Some(self.interned(defs, &seq.cats, te.category_iids[0]));
        }
        let mut parts: Vec<String> = Vec::new();
        for i in &te.category_iids {
            let c = self.interned(defs, &seq.cats, *i);
            parts.push(defs.str(c).to_owned());
        }
        parts.extend(te.categories.iter().cloned());
        (!parts.is_empty()).then(|| defs.intern(&parts.join(",")))
    }

    /// A counter value on counter track `uuid` (incremental ones accumulate per sequence).
    fn counter_value(
        &mut self,
        ctx: &mut ImportCtx,
        seq: &mut Sequence,
        uuid: u64,
        ts: i64,
        v: Num,
        at: u64,
    ) {
        let target = self.tracks.resolve(ctx.defs, uuid);
        let reading = self.tracks.readings.get(&uuid).copied().unwrap_or_default();
        let value = match v {
            Num::Int(i) => {
                let i = if reading.incremental {
                    let acc = seq.int_counters.entry(uuid).or_insert(0);
                    *acc = acc.wrapping_add(i);
                    *acc
                } else {
                    i
                };
                Num::Int(i.saturating_mul(reading.multiplier.max(1)))
            }
            Num::Float(f) => {
                let f = if reading.incremental {
                    let acc = seq.counters.entry(uuid).or_insert(0.0);
                    *acc += f;
                    *acc
                } else {
                    f
                };
                Num::Float(f * reading.multiplier.max(1) as f64)
            }
        };
        match target {
            Target::Counter(c) => {
                let _ = ctx.emit(Event::Counter(tracex_ir::CounterValue {
                    counter: c,
                    ts,
                    value,
                }));
            }
            _ => ctx
                .diag
                .record(&d::IMPORT_COUNTER_WITHOUT_VALUE, Location::Byte(at)),
        }
    }

    /// Extra counter values of an event: counter values, except thread time, which is returned
    /// (ns) for the event's slice.
    fn extra_counters(
        &mut self,
        ctx: &mut ImportCtx,
        seq: &mut Sequence,
        ts: i64,
        te: &TrackEvent,
        at: u64,
    ) -> Option<i64> {
        let defaults = seq
            .defaults
            .as_ref()
            .and_then(|d| d.track_event_defaults.clone())
            .unwrap_or_default();
        let int_uuids = if te.extra_counter_track_uuids.is_empty() {
            defaults.extra_counter_track_uuids
        } else {
            te.extra_counter_track_uuids.clone()
        };
        let double_uuids = if te.extra_double_counter_track_uuids.is_empty() {
            defaults.extra_double_counter_track_uuids
        } else {
            te.extra_double_counter_track_uuids.clone()
        };
        let mut thread_time = None;
        let values = te
            .extra_counter_values
            .iter()
            .map(|&v| Num::Int(v))
            .zip(int_uuids)
            .chain(
                te.extra_double_counter_values
                    .iter()
                    .map(|&v| Num::Float(v))
                    .zip(double_uuids),
            )
            .collect::<Vec<_>>();
        for (v, uuid) in values {
            match self.tracks.resolve(ctx.defs, uuid) {
                Target::ThreadTime(_) => {
                    let reading = self.tracks.readings.get(&uuid).copied().unwrap_or_default();
                    let raw = match v {
                        Num::Int(i) => i,
                        Num::Float(f) => f as i64,
                    };
                    let value = if reading.incremental {
                        let acc = seq.int_counters.entry(uuid).or_insert(0);
                        *acc = acc.wrapping_add(raw);
                        *acc
                    } else {
                        raw
                    };
                    thread_time = Some(value.saturating_mul(reading.multiplier.max(1)));
                }
                _ => self.counter_value(ctx, seq, uuid, ts, v, at),
            }
        }
        thread_time
    }

    /// Arguments of an event: debug annotations, then the typed fields tracex understands.
    fn event_args(
        &mut self,
        ctx: &mut ImportCtx,
        seq: &Sequence,
        te: &TrackEvent,
        at: u64,
    ) -> Args {
        let mut out = Args::new();
        args::annotations(
            ctx.defs,
            seq,
            &te.debug_annotations,
            &mut out,
            &mut self.lost,
        );
        let defs = &mut *ctx.defs;
        let mut put = |defs: &mut Defs, k: &str, v: Value| {
            let k = defs.intern(k);
            tracex_ir::defs::set_arg(&mut out, k, v);
        };
        let location = |prefix: &str,
                        l: &pb::SourceLocation,
                        defs: &mut Defs,
                        put: &mut dyn FnMut(&mut Defs, &str, Value)| {
            if let Some(f) = &l.file_name {
                put(defs, &format!("{prefix}.file_name"), Value::str(f.as_str()));
            }
            if let Some(f) = &l.function_name {
                put(
                    defs,
                    &format!("{prefix}.function_name"),
                    Value::str(f.as_str()),
                );
            }
            if let Some(n) = l.line_number {
                put(defs, &format!("{prefix}.line_number"), Value::Int(n as i64));
            }
        };
        match &te.source_location_field {
            Some(te_pb::SourceLocationField::SourceLocation(l)) => {
                location("source", l, defs, &mut put)
            }
            Some(te_pb::SourceLocationField::SourceLocationIid(i)) => match seq.locations.get(i) {
                Some(l) => location("source", l, defs, &mut put),
                None => self.lost.missing_iids += 1,
            },
            None => {}
        }
        if let Some(t) = &te.task_execution {
            match t.posted_from_iid.and_then(|i| seq.locations.get(&i)) {
                Some(l) => location("task.posted_from", l, defs, &mut put),
                None => self.lost.missing_iids += 1,
            }
        }
        if let Some(m) = &te.log_message {
            match m.body_iid.and_then(|i| seq.log_bodies.get(&i)) {
                Some(b) => put(defs, "log_message.body", Value::str(b.as_str())),
                None => self.lost.missing_iids += 1,
            }
            if let Some(l) = m.source_location_iid.and_then(|i| seq.locations.get(&i)) {
                location("log_message", l, defs, &mut put);
            }
        }
        match &te.correlation_id_field {
            Some(te_pb::CorrelationIdField::CorrelationId(c)) => {
                put(defs, "correlation_id", Value::UInt(*c))
            }
            Some(te_pb::CorrelationIdField::CorrelationIdStr(c)) => {
                put(defs, "correlation_id", Value::str(c.as_str()))
            }
            Some(te_pb::CorrelationIdField::CorrelationIdStrIid(i)) => {
                match seq.correlations.get(i) {
                    Some(c) => put(defs, "correlation_id", Value::str(c.as_str())),
                    None => self.lost.missing_iids += 1,
                }
            }
            None => {}
        }
        let typed = [
            ("cc_scheduler_state", te.cc_scheduler_state.is_some()),
            ("chrome_user_event", te.chrome_user_event.is_some()),
            ("chrome_keyed_service", te.chrome_keyed_service.is_some()),
            ("chrome_legacy_ipc", te.chrome_legacy_ipc.is_some()),
            (
                "chrome_histogram_sample",
                te.chrome_histogram_sample.is_some(),
            ),
            ("chrome_latency_info", te.chrome_latency_info.is_some()),
            ("chrome_frame_reporter", te.chrome_frame_reporter.is_some()),
            (
                "chrome_application_state_info",
                te.chrome_application_state_info.is_some(),
            ),
            (
                "chrome_renderer_scheduler_state",
                te.chrome_renderer_scheduler_state.is_some(),
            ),
            (
                "chrome_window_handle_event_info",
                te.chrome_window_handle_event_info.is_some(),
            ),
            (
                "chrome_content_settings_event_info",
                te.chrome_content_settings_event_info.is_some(),
            ),
            (
                "chrome_active_processes",
                te.chrome_active_processes.is_some(),
            ),
            ("screenshot", te.screenshot.is_some()),
            ("chrome_message_pump", te.chrome_message_pump.is_some()),
            (
                "chrome_mojo_event_info",
                te.chrome_mojo_event_info.is_some(),
            ),
        ];
        for (field, present) in typed {
            if present {
                self.typed.add(field, Location::Byte(at));
            }
        }
        out
    }

    fn event_stack(
        &mut self,
        defs: &mut Defs,
        seq: &mut Sequence,
        te: &TrackEvent,
    ) -> Option<StackId> {
        match &te.callstack_field {
            Some(te_pb::CallstackField::CallstackIid(i)) => self.stack(defs, seq, *i),
            Some(te_pb::CallstackField::Callstack(c)) => self.inline_stack(defs, &c.frames),
            None => None,
        }
    }

    /// The flow points an event carries (the deprecated varint flow ids too).
    #[allow(deprecated)]
    fn event_flows(
        &mut self,
        defs: &mut Defs,
        seq: &Sequence,
        te: &TrackEvent,
        x: Option<&Extra>,
        track: TrackId,
        ts: i64,
    ) -> Result<()> {
        let recorded: FxHashMap<u64, &XFlow> = x
            .map(|x| {
                x.flows
                    .iter()
                    .filter(|f| f.detached != Some(true))
                    .filter_map(|f| Some((f.id?, f)))
                    .collect()
            })
            .unwrap_or_default();
        let push =
            |this: &mut Self, defs: &mut Defs, key: Key, id: u64, how: How, bind: FlowBind| {
                let mut p = Pt {
                    key,
                    how,
                    track,
                    ts,
                    bind,
                    names: None,
                };
                if let Some(r) = recorded.get(&id) {
                    this.apply(defs, seq, r, &mut p);
                }
                this.flows.push(p)
            };
        let ids = te.flow_ids.iter().chain(&te.flow_ids_old);
        for &id in ids {
            push(self, defs, Key::Id(id), id, How::Ids, FlowBind::Enclosing)?;
        }
        let terminating = te
            .terminating_flow_ids
            .iter()
            .chain(&te.terminating_flow_ids_old);
        for &id in terminating {
            push(
                self,
                defs,
                Key::Id(id),
                id,
                How::Terminating,
                FlowBind::Enclosing,
            )?;
        }
        if let Some(l) = &te.legacy_event {
            if let (Some(bind), Some(dir)) = (l.bind_id, l.flow_direction) {
                let r = match FlowDirection::try_from(dir) {
                    Ok(FlowDirection::FlowOut) => Some(FlowRole::Start),
                    Ok(FlowDirection::FlowInout) => Some(FlowRole::Step),
                    Ok(FlowDirection::FlowIn) => Some(FlowRole::End),
                    _ => None,
                };
                if let Some(r) = r {
                    push(
                        self,
                        defs,
                        Key::Id(bind),
                        bind,
                        How::Role(r),
                        FlowBind::Enclosing,
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Applies tracex's record of a flow point (exact time, binding, role, name).
    fn apply(&mut self, defs: &mut Defs, seq: &Sequence, r: &XFlow, p: &mut Pt) {
        if let Some(t) = r.ts {
            p.ts = t;
        }
        if r.next == Some(true) {
            p.bind = FlowBind::Next;
        }
        if let Some(role) = role(r.role) {
            p.how = How::Role(role);
        }
        if r.name_iid.is_some() || r.category_iid.is_some() {
            let mut lookup = |table: &FxHashMap<u64, StrId>, iid: Option<u64>| match iid {
                Some(0) | None => None,
                Some(i) => Some(self.interned(defs, table, i)),
            };
            let name = lookup(&seq.names, r.name_iid);
            let cat = lookup(&seq.cats, r.category_iid);
            p.names = Some((name, cat));
        }
    }

    /// Flow points only tracex's extension holds (Perfetto could not draw them).
    fn detached_flows(
        &mut self,
        ctx: &mut ImportCtx,
        seq: &Sequence,
        ts: Option<i64>,
        x: &Extra,
    ) -> Result<()> {
        for f in x.flows.iter().filter(|f| f.detached == Some(true)) {
            let (Some(id), Some(track)) = (f.id, f.track) else {
                continue;
            };
            let Some(t) = f.ts.or(ts) else {
                continue;
            };
            let track = self.tracks.track(ctx.defs, track);
            let mut p = Pt {
                key: Key::Id(id),
                how: How::Role(role(f.role).unwrap_or(FlowRole::Start)),
                track,
                ts: t,
                bind: FlowBind::Enclosing,
                names: None,
            };
            self.apply(ctx.defs, seq, f, &mut p);
            self.flows.push(p)?;
        }
        Ok(())
    }

    fn track_event(
        &mut self,
        ctx: &mut ImportCtx,
        seq: &mut Sequence,
        at: u64,
        ts: Option<i64>,
        x: Option<Extra>,
        te: TrackEvent,
    ) -> Result<()> {
        // legacy encodings of time: µs deltas from the sequence's thread descriptor
        let ts = match (ts, &te.timestamp) {
            (Some(t), _) => t,
            (None, Some(te_pb::Timestamp::TimestampAbsoluteUs(us))) => {
                match self
                    .clocks
                    .to_trace(MONOTONIC, *us as i128 * 1000)
                    .and_then(|t| self.ir_time(t))
                {
                    Some(t) => t,
                    None => {
                        ctx.diag
                            .record(&d::IMPORT_UNKNOWN_CLOCK, Location::Byte(at));
                        return Ok(());
                    }
                }
            }
            (None, Some(te_pb::Timestamp::TimestampDeltaUs(us))) => {
                let base = seq.legacy_ts.unwrap_or(0) + *us as i128 * 1000;
                seq.legacy_ts = Some(base);
                match self
                    .clocks
                    .to_trace(MONOTONIC, base)
                    .and_then(|t| self.ir_time(t))
                {
                    Some(t) => t,
                    None => {
                        ctx.diag
                            .record(&d::IMPORT_UNKNOWN_CLOCK, Location::Byte(at));
                        return Ok(());
                    }
                }
            }
            (None, None) => {
                ctx.diag
                    .record(&d::IMPORT_MISSING_TIMESTAMP, Location::Byte(at));
                return Ok(());
            }
        };
        let ty = te.r#type.unwrap_or(0);
        let legacy = te.legacy_event.clone().map(|l| *l);
        let phase = legacy
            .as_ref()
            .and_then(|l| l.phase)
            .map(|p| p as u8 as char);
        if ty == te_pb::Type::Counter as i32 {
            let uuid = self.event_uuid(seq, &te);
            let v = match te.counter_value_field {
                Some(CounterValueField::CounterValue(v)) => Num::Int(v),
                Some(CounterValueField::DoubleCounterValue(v)) => Num::Float(v),
                None => {
                    ctx.diag
                        .record(&d::IMPORT_COUNTER_WITHOUT_VALUE, Location::Byte(at));
                    return Ok(());
                }
            };
            self.extra_counters(ctx, seq, ts, &te, at);
            self.counter_value(ctx, seq, uuid, ts, v, at);
            return Ok(());
        }
        // a type this reader does not know (a later Perfetto's, or a damaged field) is taken
        // by its legacy phase, or counted
        let slice_or_instant = matches!(ty, 1..=3);
        if ty == te_pb::Type::State as i32 || (!slice_or_instant && phase.is_none()) {
            let what = match ty {
                0 => "no type or phase".to_string(),
                t if t == te_pb::Type::State as i32 => "state".to_string(),
                t => format!("type {t}, no phase"),
            };
            self.events_unmapped.add(what, Location::Byte(at));
            return Ok(());
        }
        let mut thread_time = self.extra_counters(ctx, seq, ts, &te, at);
        match &te.thread_time {
            Some(te_pb::ThreadTime::ThreadTimeAbsoluteUs(us)) => thread_time = Some(us * 1000),
            Some(te_pb::ThreadTime::ThreadTimeDeltaUs(us)) => {
                let t = seq.legacy_thread_time.unwrap_or(0) + us * 1000;
                seq.legacy_thread_time = Some(t);
                thread_time = Some(t);
            }
            None => {}
        }
        let name = self.event_name(ctx.defs, seq, &te);
        let cat = self.event_category(ctx.defs, seq, &te);
        let Some(track) = self.event_track(ctx, seq, &te, legacy.as_ref(), phase) else {
            self.events_unmapped.add(
                "legacy event of pid or tid 0 (reserved)",
                Location::Byte(at),
            );
            return Ok(());
        };
        let color = x
            .as_ref()
            .and_then(|x| x.color.as_deref())
            .map(|c| ctx.defs.intern(c));
        let kind = match (ty, phase) {
            (1, _) => 'B',
            (2, _) => 'E',
            (3, _) => 'i',
            (_, Some(p)) => p,
            (_, None) => unreachable!("a type without a phase is counted above"),
        };
        match kind {
            'B' | 'b' | 'S' | 'X' => {
                let args = self.event_args(ctx, seq, &te, at);
                let stack = self.event_stack(ctx.defs, seq, &te);
                let (track, sorted) = if kind == 'B' || kind == 'X' {
                    (track, self.shared.contains(&self.event_uuid(seq, &te)))
                } else {
                    (
                        self.legacy_async(ctx.defs, track, legacy.as_ref(), name, cat, kind),
                        true,
                    )
                };
                let mut s = Slice::new(track, ts, 0, name);
                s.cat = cat;
                s.args = args;
                s.stack = stack;
                s.color = color;
                s.thread_ts = thread_time;
                if let Some(x) = &x {
                    if x.thread_ts.is_some() {
                        s.thread_ts = x.thread_ts;
                    }
                    if x.thread_dur.is_some() {
                        s.thread_dur = x.thread_dur;
                    }
                }
                self.event_flows(ctx.defs, seq, &te, x.as_ref(), track, ts)?;
                if kind == 'X' {
                    let l = legacy.as_ref().expect("legacy phase");
                    s.dur = Some(l.duration_us.unwrap_or(0).max(0) * 1000);
                    if s.thread_ts.is_some() {
                        s.thread_dur = l.thread_duration_us.map(|u| u * 1000);
                    }
                    ctx.emit(Event::Slice(s))?;
                } else if sorted {
                    self.keep(track, Rec::Begin(s))?;
                } else {
                    self.slices.begin(track, s);
                }
            }
            'E' | 'e' | 'F' => {
                let (track, sorted) = if kind == 'E' {
                    (track, self.shared.contains(&self.event_uuid(seq, &te)))
                } else {
                    (
                        self.legacy_async(ctx.defs, track, legacy.as_ref(), name, cat, kind),
                        true,
                    )
                };
                let end = End {
                    ts,
                    name: (name != StrId::EMPTY).then_some(name),
                    cat,
                    args: self.event_args(ctx, seq, &te, at),
                    thread_time,
                    thread_dur: x.as_ref().and_then(|x| x.thread_dur),
                    at,
                };
                self.event_flows(ctx.defs, seq, &te, x.as_ref(), track, ts)?;
                if sorted {
                    self.keep(track, Rec::End(end))?;
                } else {
                    match self.slices.end(track, &end) {
                        Some(s) => {
                            let s = close(ctx.defs, ctx.diag, s, end);
                            ctx.emit(Event::Slice(s))?
                        }
                        None => ctx
                            .diag
                            .record(&d::IMPORT_UNMATCHED_END, Location::Byte(at)),
                    }
                }
            }
            'i' | 'I' | 'R' | 'n' | 'T' | 'p' => {
                let track = match kind {
                    'n' | 'T' | 'p' => {
                        self.legacy_async(ctx.defs, track, legacy.as_ref(), name, cat, kind)
                    }
                    _ => track,
                };
                if thread_time.is_some() {
                    ctx.diag
                        .record(&d::IMPORT_THREAD_TIME_DROPPED, Location::Byte(at));
                }
                let args = self.event_args(ctx, seq, &te, at);
                let stack = self.event_stack(ctx.defs, seq, &te);
                self.event_flows(ctx.defs, seq, &te, x.as_ref(), track, ts)?;
                ctx.emit(Event::Instant(Instant {
                    track,
                    ts,
                    name,
                    cat,
                    args,
                    stack,
                    color,
                }))?;
            }
            's' | 't' | 'f' => {
                let l = legacy.as_ref().expect("legacy phase");
                let id = match l.id {
                    Some(LegacyId::UnscopedId(i))
                    | Some(LegacyId::GlobalId(i))
                    | Some(LegacyId::LocalId(i)) => i,
                    None => l.bind_id.unwrap_or(0),
                };
                let key = if self.tracex {
                    Key::Id(id)
                } else {
                    Key::V1(id, cat, (name != StrId::EMPTY).then_some(name))
                };
                let role = match kind {
                    's' => FlowRole::Start,
                    't' => FlowRole::Step,
                    _ => FlowRole::End,
                };
                let bind = if kind == 'f' && l.bind_to_enclosing != Some(true) {
                    FlowBind::Next
                } else {
                    FlowBind::Enclosing
                };
                let mut p = Pt {
                    key,
                    how: How::Role(role),
                    track,
                    ts,
                    bind,
                    names: Some(((name != StrId::EMPTY).then_some(name), cat)),
                };
                if let Some(r) = x
                    .as_ref()
                    .and_then(|x| x.flows.iter().find(|f| f.id == Some(id)))
                {
                    self.apply(ctx.defs, seq, r, &mut p);
                }
                self.flows.push(p)?;
            }
            'M' => {
                let args = self.event_args(ctx, seq, &te, at);
                self.metadata(ctx.defs, track, name, args);
            }
            other => self
                .events_unmapped
                .add(format!("legacy phase {other}"), Location::Byte(at)),
        }
        Ok(())
    }

    /// A legacy metadata event: names and sort indexes of the thread's process or thread, other
    /// records as process (or thread) metadata holding their arguments.
    fn metadata(&mut self, defs: &mut Defs, track: TrackId, name: StrId, args: Args) {
        let arg = |key: &str| {
            args.iter()
                .find(|a| defs.str(a.key) == key)
                .map(|a| a.value.clone())
        };
        let text = match arg("name") {
            Some(Value::Str(s)) => Some(s.to_string()),
            Some(Value::Json(j)) => serde_json::from_str::<String>(&j).ok(),
            _ => None,
        };
        let sort = match arg("sort_index") {
            Some(Value::Int(i)) => Some(i),
            Some(Value::UInt(u)) => i64::try_from(u).ok(),
            Some(Value::Json(j)) => j.parse().ok(),
            _ => None,
        };
        let thread = defs.track_thread(track);
        let process = defs.track(track).process;
        let what = defs.str(name).to_owned();
        match (what.as_str(), thread, process) {
            ("thread_name", Some(th), _) if text.is_some() => {
                let n = defs.intern(&text.expect("checked"));
                defs.set_thread_name(th, n, tracex_ir::NamePriority::Explicit);
            }
            ("process_name", _, Some(p)) if text.is_some() => {
                let n = defs.intern(&text.expect("checked"));
                defs.set_process_name(p, n, tracex_ir::NamePriority::Explicit);
            }
            ("thread_sort_index", Some(th), _) if sort.is_some() => {
                defs.thread_mut(th).sort_index = sort
            }
            ("process_sort_index", _, Some(p)) if sort.is_some() => {
                defs.process_mut(p).sort_index = sort
            }
            (_, th, p) => {
                let json = serde_json::Value::Object(
                    args.iter()
                        .map(|a| {
                            (
                                defs.str(a.key).to_owned(),
                                args::to_json_value(defs, &a.value),
                            )
                        })
                        .collect(),
                );
                let value = Value::Json(json.to_string().into());
                match (what.starts_with("thread_"), th, p) {
                    (true, Some(th), _) => {
                        tracex_ir::defs::set_arg(&mut defs.thread_mut(th).meta, name, value)
                    }
                    (_, _, Some(p)) => {
                        tracex_ir::defs::set_arg(&mut defs.process_mut(p).meta, name, value)
                    }
                    _ => self
                        .events_unmapped
                        .add(format!("legacy metadata {what}"), Location::Nowhere),
                }
            }
        }
    }

    /// The Android payloads' state, what they write to besides it, and the trace's clocks.
    fn android(&mut self) -> (&mut Android, Out<'_>, &Clocks) {
        let out = Out {
            tracks: &mut self.tracks,
            ordered: &mut self.ordered,
            unmapped: &mut self.unmapped,
            bookkeeping: &mut self.bookkeeping,
        };
        (&mut self.android, out, &self.clocks)
    }

    /// Begins and ends in time order, track by track: completed slices are pushed.
    fn match_kept(&mut self, ctx: &mut ImportCtx, mut kept: Sorted<Kept>) -> Result<()> {
        while let Some(Kept { track, rec, .. }) = kept.next()? {
            match rec {
                Rec::Begin(s) => self.slices.begin(track, s),
                Rec::End(end) => match self.slices.end(track, &end) {
                    Some(s) => {
                        let s = close(ctx.defs, ctx.diag, s, end);
                        ctx.emit(Event::Slice(s))?
                    }
                    None => ctx
                        .diag
                        .record(&d::IMPORT_UNMATCHED_END, Location::Byte(end.at)),
                },
            }
        }
        Ok(())
    }

    /// A begin or end on a track matched in time order at the end.
    fn keep(&mut self, track: TrackId, r: Rec) -> Result<()> {
        Ok(self.ordered.keep(track, r)?)
    }

    fn event_uuid(&self, seq: &Sequence, te: &TrackEvent) -> u64 {
        te.track_uuid
            .or(seq
                .defaults
                .as_ref()
                .and_then(|d| d.track_event_defaults.as_ref())
                .and_then(|d| d.track_uuid))
            .unwrap_or(0)
    }

    /// The IR track of a (non-counter) event: its track uuid, or the sequence's thread for
    /// legacy events without one, or pid/tid overrides, or the trace-wide track.
    fn event_track(
        &mut self,
        ctx: &mut ImportCtx,
        seq: &Sequence,
        te: &TrackEvent,
        legacy: Option<&LegacyEvent>,
        phase: Option<char>,
    ) -> Option<TrackId> {
        let uuid = self.event_uuid(seq, te);
        let thread = seq
            .thread
            .as_ref()
            .map(|t| (t.pid.unwrap_or(0) as i64, t.tid.unwrap_or(0)));
        let pid_override = legacy.and_then(|l| l.pid_override).map(i64::from);
        let tid_override = legacy.and_then(|l| l.tid_override).map(i64::from);
        let track = if uuid != 0 {
            self.tracks.track(ctx.defs, uuid)
        } else if let (Some(pid), None) = (pid_override, tid_override) {
            let p = self.tracks.process_by_pid(ctx.defs, pid);
            self.tracks.process_track(ctx.defs, p)
        } else if let Some((pid, tid)) = match (thread, pid_override, tid_override) {
            (Some((pid, _)), None, Some(t)) => Some((pid, t)),
            (_, Some(p), Some(t)) => Some((p, t)),
            (t, _, _) if te.track_uuid.is_none() || te.r#type.is_none() => t,
            _ => None,
        } {
            if pid == 0 || tid == 0 {
                return None;
            }
            let th = self.tracks.thread_by_tid(ctx.defs, pid, tid);
            ctx.defs.thread(th).track
        } else {
            ctx.defs.global_track()
        };
        // legacy instants name their scope
        if matches!(phase, Some('i') | Some('I')) {
            let scope = legacy
                .and_then(|l| l.instant_event_scope)
                .and_then(|s| InstantEventScope::try_from(s).ok());
            match scope {
                Some(InstantEventScope::ScopeGlobal) => return Some(ctx.defs.global_track()),
                Some(InstantEventScope::ScopeProcess) => {
                    if let Some(p) = ctx.defs.track(track).process {
                        return Some(self.tracks.process_track(ctx.defs, p));
                    }
                }
                _ => {}
            }
        }
        Some(track)
    }

    /// The async track of a legacy async event: one per process, id and scope (the category,
    /// or the name for the old `S`/`F` events), as trace processor keys them.
    fn legacy_async(
        &mut self,
        defs: &mut Defs,
        track: TrackId,
        legacy: Option<&LegacyEvent>,
        name: StrId,
        cat: Option<StrId>,
        phase: char,
    ) -> TrackId {
        let Some(l) = legacy else {
            return track;
        };
        let (id, local) = match l.id {
            Some(LegacyId::UnscopedId(i)) | Some(LegacyId::GlobalId(i)) => (i, false),
            Some(LegacyId::LocalId(i)) => (i, true),
            None => return track,
        };
        let process = defs.track(track).process;
        let old_style = matches!(phase, 'S' | 'F' | 'T' | 'p');
        let mut scope = if old_style {
            defs.str(name).to_owned()
        } else {
            cat.map(|c| defs.str(c).to_owned()).unwrap_or_default()
        };
        if let Some(s) = &l.id_scope {
            scope = format!("{scope}:{s}");
        }
        let scope_id = defs.intern(&scope);
        // local ids are per process; global and unscoped ones are shared by all processes
        let key = (if local { process } else { None }, id, scope_id);
        if let Some(&t) = self.legacy_async.get(&key) {
            return t;
        }
        let label = defs.intern(&format!("0x{id:x}"));
        let t = defs.add_track(Track {
            kind: TrackKind::Async,
            process,
            name: Some(name),
            label: Some(label),
            sort_index: None,
        });
        self.legacy_async.insert(key, t);
        t
    }

    fn stack_sample(
        &mut self,
        ctx: &mut ImportCtx,
        seq: &mut Sequence,
        at: u64,
        ts: Option<i64>,
        x: Option<Extra>,
        s: pb::StackSample,
    ) -> Result<()> {
        use pb::stack_sample::{
            CallstackField, ExecutionContextField, PrimaryDescriptorField, TaskContextField,
        };
        let task = match &s.task_context_field {
            Some(TaskContextField::TaskContext(t)) => Some(*t),
            Some(TaskContextField::TaskContextIid(i)) => seq.tasks.get(i).cloned(),
            None => None,
        };
        let cpu = match &s.execution_context_field {
            Some(ExecutionContextField::ExecutionContext(c)) => c.cpu,
            Some(ExecutionContextField::ExecutionContextIid(i)) => {
                seq.cpus.get(i).copied().flatten()
            }
            None => None,
        };
        let stack = match &s.callstack_field {
            Some(CallstackField::CallstackIid(i)) => self.stack(ctx.defs, seq, *i),
            Some(CallstackField::Callstack(c)) => self.inline_stack(ctx.defs, &c.frames),
            None => None,
        };
        let name = match &s.primary_descriptor_field {
            Some(PrimaryDescriptorField::PrimaryDescriptor(d)) => d.name.clone(),
            Some(PrimaryDescriptorField::PrimaryDescriptorIid(i)) => {
                seq.sample_counters.get(i).cloned().flatten()
            }
            None => seq
                .defaults
                .as_ref()
                .and_then(|d| d.stack_sample_defaults.as_ref())
                .and_then(|d| d.primary_descriptor.as_ref())
                .and_then(|d| d.name.clone()),
        };
        // tracex names the timebase of unnamed samples "samples"
        let name = name
            .filter(|n| !(self.tracex && n == "samples"))
            .map(|n| ctx.defs.intern(&n));
        let weight = match (x.as_ref().and_then(|x| x.weight), s.primary_weight) {
            (Some(w), _) => w,
            (None, Some(w)) => i64::try_from(w).unwrap_or(i64::MAX),
            (None, None) => 1,
        };
        let untimed = x.as_ref().and_then(|x| x.untimed) == Some(true);
        let ts = if untimed { None } else { ts };
        let (pid, tid) = match &task {
            Some(t) => (t.pid.map(i64::from), t.tid.map(i64::from)),
            None => match &seq.thread {
                Some(t) => (t.pid.map(i64::from), t.tid),
                None => (None, None),
            },
        };
        self.sample(ctx, at, ts, pid, tid, stack, weight, cpu, name);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn sample(
        &mut self,
        ctx: &mut ImportCtx,
        at: u64,
        ts: Option<i64>,
        pid: Option<i64>,
        tid: Option<i64>,
        stack: Option<StackId>,
        weight: i64,
        cpu: Option<u32>,
        name: Option<StrId>,
    ) {
        let Some(tid) = tid else {
            ctx.diag
                .record(&d::IMPORT_SAMPLE_WITHOUT_THREAD, Location::Byte(at));
            return;
        };
        let th = self.tracks.thread_by_tid(ctx.defs, pid.unwrap_or(0), tid);
        let track = ctx.defs.thread(th).track;
        let _ = ctx.emit(Event::Sample(Sample {
            track,
            ts,
            stack,
            weight,
            cpu,
            name,
        }));
    }

    /// Chrome's sampling profiler: callstacks with µs time deltas on the sequence's thread.
    fn streaming_samples(
        &mut self,
        ctx: &mut ImportCtx,
        seq: &mut Sequence,
        at: u64,
        s: pb::StreamingProfilePacket,
    ) {
        let thread = seq.thread.as_ref().map(|t| (t.pid.map(i64::from), t.tid));
        for (i, iid) in s.callstack_iid.iter().enumerate() {
            let us = seq.legacy_sample_us.unwrap_or(0)
                + s.timestamp_delta_us.get(i).copied().unwrap_or(0);
            seq.legacy_sample_us = Some(us);
            let ts = self
                .clocks
                .to_trace(MONOTONIC, us as i128 * 1000)
                .and_then(|t| self.ir_time(t));
            let stack = self.stack(ctx.defs, seq, *iid);
            let (pid, tid) = thread.unwrap_or((None, None));
            match ts {
                Some(ts) => self.sample(ctx, at, Some(ts), pid, tid, stack, 1, None, None),
                None => ctx
                    .diag
                    .record(&d::IMPORT_UNKNOWN_CLOCK, Location::Byte(at)),
            }
        }
    }

    pub fn finish(mut self, ctx: &mut ImportCtx) -> Result<()> {
        self.tracks.define_rest(ctx.defs);
        self.android.finish(ctx)?;
        let kept = self.ordered.drain()?;
        self.match_kept(ctx, kept)?;
        let open = self.slices.drain();
        if !open.is_empty() {
            ctx.diag.record_n(
                &ir_kinds::OPEN_SLICE,
                open.len() as u64,
                Location::Nowhere,
                None::<String>,
            );
        }
        for s in open {
            ctx.emit(Event::Slice(s))?;
        }
        let flows = std::mem::take(&mut self.flows);
        let default = self.flow_default.take().unwrap_or((None, None));
        let unpaired = flows.pair(ctx, default)?;
        let lost = unpaired.start_alone + unpaired.step_without_start + unpaired.end_without_start;
        if lost > 0 {
            ctx.diag.record_n(
                &d::IMPORT_FLOW_UNPAIRED,
                lost,
                Location::Nowhere,
                Some(format!(
                    "{} flows begun and never continued, {} steps and {} ends without a start",
                    unpaired.start_alone, unpaired.step_without_start, unpaired.end_without_start
                )),
            );
        }
        let diag = &mut *ctx.diag;
        diag.record_n(
            &d::IMPORT_PROTO_ARG,
            self.lost.protos,
            Location::Nowhere,
            None::<String>,
        );
        diag.record_n(
            &d::IMPORT_MISSING_IID,
            self.lost.missing_iids,
            Location::Nowhere,
            None::<String>,
        );
        diag.record_n(
            &d::IMPORT_UNKNOWN_TRACK,
            self.tracks.unknown,
            Location::Nowhere,
            None::<String>,
        );
        diag.record_n(
            &d::IMPORT_TRACK_LINK,
            self.tracks.broken_links,
            Location::Nowhere,
            None::<String>,
        );
        std::mem::take(&mut self.unmapped).record(diag, &d::IMPORT_UNMAPPED);
        std::mem::take(&mut self.bookkeeping).record(diag, &d::IMPORT_BOOKKEEPING);
        std::mem::take(&mut self.typed).record(diag, &d::IMPORT_TYPED_ARGS);
        std::mem::take(&mut self.events_unmapped).record(diag, &d::IMPORT_UNMAPPED_EVENT);
        Ok(())
    }
}

/// Slices begun and not yet ended, per track.
#[derive(Default)]
struct OpenSlices {
    open: FxHashMap<TrackId, Vec<Slice>>,
}

impl OpenSlices {
    fn begin(&mut self, track: TrackId, mut s: Slice) {
        s.dur = None;
        self.open.entry(track).or_default().push(s);
    }

    /// The slice `end` closes: the innermost open one, or, when the end names one, the
    /// innermost with that name and category (as trace processor matches them).
    fn end(&mut self, track: TrackId, end: &End) -> Option<Slice> {
        let stack = self.open.get_mut(&track)?;
        let i = stack.iter().rposition(|s| {
            end.cat.is_none_or(|c| s.cat == Some(c)) && end.name.is_none_or(|n| s.name == n)
        })?;
        let s = stack.remove(i);
        if stack.is_empty() {
            self.open.remove(&track);
        }
        Some(s)
    }

    /// Every slice still open, by start time.
    fn drain(&mut self) -> Vec<Slice> {
        let mut out: Vec<Slice> = self.open.drain().flat_map(|(_, v)| v).collect();
        out.sort_by_key(|s| (s.ts, s.track));
        out
    }
}

/// A slice completed by its end: the end's arguments join the begin's, the thread time at the
/// end gives the thread duration, and a negative duration is clamped (and kept in args).
fn close(defs: &mut Defs, diag: &mut Diagnostics, mut s: Slice, end: End) -> Slice {
    s.dur = Some(end.ts - s.ts);
    for a in end.args {
        tracex_ir::defs::set_arg(&mut s.args, a.key, a.value);
    }
    if let (Some(b), Some(e)) = (s.thread_ts, end.thread_time) {
        s.thread_dur = Some(e - b);
    }
    if end.thread_dur.is_some() {
        s.thread_dur = end.thread_dur;
    }
    if let Some(dur) = s.dur.filter(|&d| d < 0) {
        let key = defs.intern("tracex_original_dur_ns");
        tracex_ir::defs::set_arg(&mut s.args, key, Value::Int(dur));
        s.dur = Some(0);
        diag.record(&ir_kinds::SLICE_NEGATIVE_DURATION, Location::Byte(end.at));
    }
    s
}
