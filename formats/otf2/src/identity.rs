//! What OTF2 has no field for, kept as JSON in properties so that a tracex archive reads back into
//! exactly the IR it was written from: the IR identity of each process (location group), track
//! (location) and counter (metric location), and the trace's clock and metadata (archive
//! property). Foreign archives lack these and are mapped from their OTF2 definitions alone.
//!
//! Values are tagged so that their type survives: `{"i":-1}`, `{"u":1}`, `{"f":"1.5"}`,
//! `{"s":"text"}`, `{"j":"[1,2]"}`, `{"b":true}`, `null`.

use serde_json::{json, Map, Value as J};
use tracex_ir::{
    Arg, Args, CounterDef, Defs, Process, ProcessKind, StrId, Track, TrackKind, Value,
};

/// Archive property marking an archive written by tracex (value: identity format version).
pub const FORMAT_PROPERTY: &str = "TRACEX::FORMAT";
/// Archive property with the input's clock origin (Unix ns of IR time 0), for readers other
/// than tracex; tracex reads it from [`TRACE_PROPERTY`].
pub const ORIGIN_PROPERTY: &str = "TRACEX::CLOCK_ORIGIN_UNIX_NS";
/// Property of the system tree root with the trace's clock, metadata and time base (JSON).
pub const TRACE_PROPERTY: &str = "TRACEX_TRACE";
/// Location group property with the IR process (JSON).
pub const PROCESS_PROPERTY: &str = "TRACEX_PROCESS";
/// Location property with the IR track (JSON).
pub const TRACK_PROPERTY: &str = "TRACEX_TRACK";
/// Location property with the IR counter of a metric location (JSON).
pub const COUNTER_PROPERTY: &str = "TRACEX_COUNTER";
/// Description of the attributes tracex uses for its own per-event fields.
pub const INTERNAL: &str = "tracex:internal";
/// Attribute descriptions telling how a STRING or UINT8 attribute holds an IR value.
pub const JSON_VALUE: &str = "tracex:json";
pub const BOOL_VALUE: &str = "tracex:bool";
pub const NULL_VALUE: &str = "tracex:null";
/// A string value holding NUL bytes (which OTF2 strings cannot), stored as a JSON string literal.
pub const ESCAPED_VALUE: &str = "tracex:escaped";
/// The region group that marks regions standing for instants (zero-length Enter/Leave pairs).
pub const INSTANT_GROUP: &str = "tracex:instants";

/// Longest piece of a property value: OTF2 stores each string in one definition record, which
/// must fit in a definition chunk, so long JSON (Chrome metadata can be megabytes) is split.
pub const PIECE: usize = 1 << 20;

/// `text` cut into pieces of at most [`PIECE`] bytes at character boundaries, stored under
/// `NAME`, `NAME+1`, `NAME+2`, ... (rejoined by the importer).
pub fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        if rest.len() <= PIECE {
            out.push(rest);
            return out;
        }
        let mut cut = PIECE;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
}

/// The property name of piece `i` of a value.
pub fn piece_name(name: &str, i: usize) -> String {
    if i == 0 {
        name.to_string()
    } else {
        format!("{name}+{i}")
    }
}

pub fn float_text(f: f64) -> String {
    if f.is_finite() {
        ryu::Buffer::new().format_finite(f).to_string()
    } else if f.is_nan() {
        "NaN".into()
    } else if f > 0.0 {
        "inf".into()
    } else {
        "-inf".into()
    }
}

pub fn value_json(defs: &Defs, v: &Value) -> J {
    match v {
        Value::Null => J::Null,
        Value::Bool(b) => json!({ "b": b }),
        Value::Int(i) => json!({ "i": i }),
        Value::UInt(u) => json!({ "u": u }),
        Value::Float(f) => json!({ "f": float_text(*f) }),
        Value::Str(s) => json!({ "s": s.as_ref() }),
        Value::Sym(s) => json!({ "s": defs.str(*s) }),
        Value::Json(s) => json!({ "j": s.as_ref() }),
        Value::JsonSym(s) => json!({ "j": defs.str(*s) }),
    }
}

pub fn value_from_json(j: &J) -> Option<Value> {
    if j.is_null() {
        return Some(Value::Null);
    }
    let (k, v) = j.as_object()?.iter().next()?;
    Some(match k.as_str() {
        "b" => Value::Bool(v.as_bool()?),
        "i" => Value::Int(v.as_i64()?),
        "u" => Value::UInt(v.as_u64()?),
        "f" => Value::Float(v.as_str()?.parse().ok()?),
        "s" => Value::Str(v.as_str()?.into()),
        "j" => Value::Json(v.as_str()?.into()),
        _ => return None,
    })
}

pub fn args_json(defs: &Defs, args: &Args) -> J {
    J::Array(
        args.iter()
            .map(|a| json!([defs.str(a.key), value_json(defs, &a.value)]))
            .collect(),
    )
}

pub fn args_from_json(defs: &mut Defs, j: Option<&J>) -> Args {
    let Some(items) = j.and_then(J::as_array) else {
        return Args::new();
    };
    items
        .iter()
        .filter_map(|it| {
            let key = it.get(0)?.as_str()?;
            let value = value_from_json(it.get(1)?)?;
            Some(Arg {
                key: defs.intern(key),
                value,
            })
        })
        .collect()
}

fn put_str(m: &mut Map<String, J>, key: &str, defs: &Defs, v: Option<StrId>) {
    if let Some(v) = v {
        m.insert(key.into(), J::String(defs.str(v).into()));
    }
}

fn put<T: Into<J>>(m: &mut Map<String, J>, key: &str, v: Option<T>) {
    if let Some(v) = v {
        m.insert(key.into(), v.into());
    }
}

fn get_str(defs: &mut Defs, j: &J, key: &str) -> Option<StrId> {
    j.get(key).and_then(J::as_str).map(|s| defs.intern(s))
}

/// The IR process behind a location group.
pub fn process_json(defs: &Defs, id: u32, p: &Process) -> String {
    let mut m = Map::new();
    m.insert("id".into(), id.into());
    if let ProcessKind::Device { device } = p.kind {
        m.insert("device".into(), device.into());
    }
    put(&mut m, "pid", p.os_pid);
    put_str(&mut m, "label", defs, p.label);
    put_str(&mut m, "name", defs, p.name);
    put(&mut m, "sort", p.sort_index);
    put_str(&mut m, "host", defs, p.host);
    if !p.meta.is_empty() {
        m.insert("meta".into(), args_json(defs, &p.meta));
    }
    J::Object(m).to_string()
}

/// A process from [`process_json`]; returns its exporter id too.
pub fn process_from_json(defs: &mut Defs, text: &str) -> Option<(u64, Process)> {
    let j: J = serde_json::from_str(text).ok()?;
    let id = j.get("id")?.as_u64()?;
    let name = get_str(defs, &j, "name");
    let p = Process {
        kind: match j.get("device").and_then(J::as_u64) {
            Some(d) => ProcessKind::Device { device: d as u32 },
            None => ProcessKind::Host,
        },
        os_pid: j.get("pid").and_then(J::as_i64),
        label: get_str(defs, &j, "label"),
        name,
        name_priority: if name.is_some() {
            tracex_ir::NamePriority::Explicit
        } else {
            tracex_ir::NamePriority::None
        },
        sort_index: j.get("sort").and_then(J::as_i64),
        host: get_str(defs, &j, "host"),
        meta: args_from_json(defs, j.get("meta")),
    };
    Some((id, p))
}

/// What a location stands for, with the ids needed to rebuild it.
#[derive(Clone, Debug, PartialEq)]
pub enum TrackIdentity {
    Thread {
        process: u64,
        tid: Option<i64>,
        label: Option<String>,
        name: Option<String>,
        sort: Option<i64>,
        meta: J,
    },
    Other {
        /// `gpu`, `async`, `process`, `global`.
        kind: String,
        process: Option<u64>,
        device: u32,
        stream: u32,
        label: Option<String>,
        name: Option<String>,
        sort: Option<i64>,
    },
    Overflow {
        of: u64,
        level: u32,
    },
}

/// The IR track behind a location. `process_id` maps an IR process to its exporter id.
pub fn track_json(defs: &Defs, id: u32, t: &Track) -> String {
    let mut m = Map::new();
    m.insert("id".into(), id.into());
    let s = |x: Option<StrId>| x.map(|v| defs.str(v).to_string());
    match t.kind {
        TrackKind::Thread(th) => {
            let th = defs.thread(th);
            m.insert("kind".into(), "thread".into());
            m.insert("process".into(), th.process.0.into());
            put(&mut m, "tid", th.os_tid);
            put(&mut m, "label", s(th.label));
            put(&mut m, "name", s(th.name));
            put(&mut m, "sort", th.sort_index);
            if !th.meta.is_empty() {
                m.insert("meta".into(), args_json(defs, &th.meta));
            }
        }
        TrackKind::Overflow { of, level } => {
            m.insert("kind".into(), "overflow".into());
            m.insert("of".into(), of.0.into());
            m.insert("level".into(), level.into());
        }
        kind => {
            let (k, device, stream) = match kind {
                TrackKind::GpuStream { device, stream } => ("gpu", device, stream),
                TrackKind::Async => ("async", 0, 0),
                TrackKind::Process => ("process", 0, 0),
                _ => ("global", 0, 0),
            };
            m.insert("kind".into(), k.into());
            if k == "gpu" {
                m.insert("device".into(), device.into());
                m.insert("stream".into(), stream.into());
            }
            put(&mut m, "process", t.process.map(|p| p.0));
            put(&mut m, "label", s(t.label));
            put(&mut m, "name", s(t.name));
            put(&mut m, "sort", t.sort_index);
        }
    }
    J::Object(m).to_string()
}

/// A track from [`track_json`], with its exporter id.
pub fn track_from_json(text: &str) -> Option<(u64, TrackIdentity)> {
    let j: J = serde_json::from_str(text).ok()?;
    let id = j.get("id")?.as_u64()?;
    let s = |k: &str| j.get(k).and_then(J::as_str).map(String::from);
    let kind = j.get("kind")?.as_str()?;
    let t = match kind {
        "thread" => TrackIdentity::Thread {
            process: j.get("process")?.as_u64()?,
            tid: j.get("tid").and_then(J::as_i64),
            label: s("label"),
            name: s("name"),
            sort: j.get("sort").and_then(J::as_i64),
            meta: j.get("meta").cloned().unwrap_or(J::Null),
        },
        "overflow" => TrackIdentity::Overflow {
            of: j.get("of")?.as_u64()?,
            level: j.get("level")?.as_u64()? as u32,
        },
        "gpu" | "async" | "process" | "global" => TrackIdentity::Other {
            kind: kind.to_string(),
            process: j.get("process").and_then(J::as_u64),
            device: j.get("device").and_then(J::as_u64).unwrap_or(0) as u32,
            stream: j.get("stream").and_then(J::as_u64).unwrap_or(0) as u32,
            label: s("label"),
            name: s("name"),
            sort: j.get("sort").and_then(J::as_i64),
        },
        _ => return None,
    };
    Some((id, t))
}

/// The IR counter behind a metric location.
pub fn counter_json(defs: &Defs, id: u32, c: &CounterDef) -> String {
    let mut m = Map::new();
    m.insert("id".into(), id.into());
    put(&mut m, "process", c.process.map(|p| p.0));
    m.insert("name".into(), defs.str(c.name).into());
    put_str(&mut m, "series", defs, c.series);
    put_str(&mut m, "label", defs, c.label);
    put_str(&mut m, "unit", defs, c.unit);
    put_str(&mut m, "cat", defs, c.cat);
    J::Object(m).to_string()
}

/// A counter from [`counter_json`]: its exporter id, its process's exporter id, and the counter
/// (whose `process` the caller sets).
pub fn counter_from_json(defs: &mut Defs, text: &str) -> Option<(u64, Option<u64>, CounterDef)> {
    let j: J = serde_json::from_str(text).ok()?;
    let id = j.get("id")?.as_u64()?;
    let process = j.get("process").and_then(J::as_u64);
    let name = get_str(defs, &j, "name")?;
    let c = CounterDef {
        process: None,
        name,
        series: get_str(defs, &j, "series"),
        label: get_str(defs, &j, "label"),
        unit: get_str(defs, &j, "unit"),
        cat: get_str(defs, &j, "cat"),
    };
    Some((id, process, c))
}

/// The trace-level fields: clock origin and domain, metadata, and the IR time of tick 0.
pub fn trace_json(defs: &Defs, tick_zero: i64) -> String {
    let mut m = Map::new();
    m.insert("tick_zero".into(), tick_zero.into());
    put(&mut m, "origin_unix_ns", defs.clock.origin_unix_ns);
    put_str(&mut m, "domain", defs, defs.clock.domain);
    if !defs.meta.is_empty() {
        m.insert("meta".into(), args_json(defs, &defs.meta));
    }
    J::Object(m).to_string()
}

/// Applies [`trace_json`] to `defs`; returns the IR time of tick 0.
pub fn apply_trace_json(defs: &mut Defs, text: &str) -> Option<i64> {
    let j: J = serde_json::from_str(text).ok()?;
    defs.clock.origin_unix_ns = j.get("origin_unix_ns").and_then(J::as_i64);
    defs.clock.domain = get_str(defs, &j, "domain");
    let meta = args_from_json(defs, j.get("meta"));
    defs.meta = meta;
    j.get("tick_zero").and_then(J::as_i64)
}

/// tracex's own per-event fields, stored as attributes described as `tracex:internal`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Internal {
    /// On the Leave written at the end of the trace for a slice that never ended.
    Open,
    Color,
    ThreadTs,
    ThreadDur,
    Stack,
    Flow,
    FlowRole,
    FlowBind,
    FlowName,
    FlowCat,
    Weight,
    Cpu,
    SampleName,
}

impl Internal {
    pub const ALL: [Internal; 13] = [
        Internal::Open,
        Internal::Color,
        Internal::ThreadTs,
        Internal::ThreadDur,
        Internal::Stack,
        Internal::Flow,
        Internal::FlowRole,
        Internal::FlowBind,
        Internal::FlowName,
        Internal::FlowCat,
        Internal::Weight,
        Internal::Cpu,
        Internal::SampleName,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Internal::Open => "tracex:open",
            Internal::Color => "tracex:color",
            Internal::ThreadTs => "tracex:tts",
            Internal::ThreadDur => "tracex:tdur",
            Internal::Stack => "tracex:stack",
            Internal::Flow => "tracex:flow",
            Internal::FlowRole => "tracex:flow_role",
            Internal::FlowBind => "tracex:flow_bind",
            Internal::FlowName => "tracex:flow_name",
            Internal::FlowCat => "tracex:flow_cat",
            Internal::Weight => "tracex:weight",
            Internal::Cpu => "tracex:cpu",
            Internal::SampleName => "tracex:sample_name",
        }
    }

    pub fn from_name(name: &str) -> Option<Internal> {
        Internal::ALL.into_iter().find(|i| i.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_at_character_boundaries() {
        let text = "é".repeat(PIECE);
        let p = pieces(&text);
        assert_eq!(p.len(), 2);
        assert!(p.iter().all(|x| x.len() <= PIECE));
        assert_eq!(p.concat(), text);
        assert_eq!(pieces("").len(), 1);
        assert_eq!(piece_name("X", 2), "X+2");
    }

    #[test]
    fn values_keep_their_type() {
        for v in [
            Value::Null,
            Value::Bool(true),
            Value::Int(-3),
            Value::UInt(u64::MAX),
            Value::Float(0.1),
            Value::Float(f64::NAN),
            Value::Float(f64::NEG_INFINITY),
            Value::Str("5".into()),
            Value::Json("[1, 2]".into()),
        ] {
            let back = value_from_json(&value_json(&Defs::default(), &v)).unwrap();
            match (&v, &back) {
                (Value::Float(a), Value::Float(b)) => {
                    assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()))
                }
                _ => assert_eq!(v, back),
            }
        }
        let mut defs = Defs::default();
        let sym = Value::Sym(defs.intern("sm_90"));
        let back = value_from_json(&value_json(&defs, &sym)).unwrap();
        assert_eq!(back, Value::str("sm_90"));
        let json = Value::JsonSym(defs.intern("[1,2]"));
        let back = value_from_json(&value_json(&defs, &json)).unwrap();
        assert_eq!(back, Value::Json("[1,2]".into()));
    }

    #[test]
    fn processes_tracks_and_counters_round_trip() {
        let mut d = Defs::new();
        let name = d.intern("python");
        let key = d.intern("cmdline");
        let p = Process {
            kind: ProcessKind::Device { device: 2 },
            os_pid: Some(-1),
            name: Some(name),
            name_priority: tracex_ir::NamePriority::Explicit,
            sort_index: Some(4),
            meta: vec![Arg {
                key,
                value: Value::Str("a b".into()),
            }],
            ..Process::default()
        };
        let text = process_json(&d, 7, &p);
        let (id, back) = process_from_json(&mut d, &text).unwrap();
        assert_eq!((id, back), (7, p));

        let pid = d.add_process(Process::default());
        let th = d.add_thread(pid, Some(12), None);
        let track = d.thread(th).track;
        let text = track_json(&d, track.0, d.track(track));
        let (_, t) = track_from_json(&text).unwrap();
        assert!(
            matches!(t, TrackIdentity::Thread { tid: Some(12), .. }),
            "{t:?}"
        );
        let o = tracex_ir::nest::OverflowTracks::default().get(&mut d, track, 2);
        let (_, t) = track_from_json(&track_json(&d, o.0, d.track(o))).unwrap();
        assert_eq!(
            t,
            TrackIdentity::Overflow {
                of: track.0 as u64,
                level: 2
            }
        );

        let c = CounterDef {
            process: Some(pid),
            name,
            series: Some(key),
            label: None,
            unit: None,
            cat: None,
        };
        let text = counter_json(&d, 3, &c);
        let (cid, proc_id, back) = counter_from_json(&mut d, &text).unwrap();
        assert_eq!((cid, proc_id), (3, Some(pid.0 as u64)));
        assert_eq!(back.series, Some(key));
    }
}
