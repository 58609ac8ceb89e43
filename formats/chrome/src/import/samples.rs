//! Stacks and samples: `stackFrames` with `sf` references, inline `stack` arrays, the top-level
//! `samples` array, and V8 CPU profiles carried by `P` events (`Profile` / `ProfileChunk`).

use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::value::RawValue;
use tracex_ir::{Defs, Diagnostics, Location, ProcessId, Sample, StackId, TrackId};

use super::ids::{IdKey, Identities};
use super::raw::Raw;
use crate::diag as d;
use crate::number::micros_to_ns;

/// Chrome stack frame ids (`sf`, `stackFrames` keys) mapped to IR stack nodes.
#[derive(Default)]
pub struct Stacks {
    sf: FxHashMap<Box<str>, StackId>,
}

#[derive(Deserialize)]
struct FrameDef {
    name: Option<String>,
    category: Option<String>,
    parent: Option<Box<RawValue>>,
}

/// Frame ids are compared by text: `"12"` and `12` name the same frame.
fn frame_key(raw: &str) -> String {
    let t = raw.trim();
    if t.starts_with('"') {
        serde_json::from_str::<String>(t).unwrap_or_else(|_| t.to_string())
    } else {
        t.to_string()
    }
}

impl Stacks {
    fn node(&mut self, defs: &mut Defs, key: String) -> StackId {
        if let Some(&s) = self.sf.get(key.as_str()) {
            return s;
        }
        let s = defs.stacks.reserve();
        self.sf.insert(key.into_boxed_str(), s);
        s
    }

    /// The stack an `sf` reference names (defined now or later by `stackFrames`).
    pub fn sf(&mut self, defs: &mut Defs, raw: &str) -> StackId {
        self.node(defs, frame_key(raw))
    }

    /// An inline `stack`: an array of frame names, root first.
    pub fn inline(&mut self, defs: &mut Defs, raw: &str) -> Option<StackId> {
        let names: Vec<serde_json::Value> = serde_json::from_str(raw).ok()?;
        let frames: Vec<_> = names
            .iter()
            .map(|n| {
                let text = match n {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let id = defs.intern(&text);
                defs.stacks.intern_frame(id, None)
            })
            .collect();
        defs.stacks.intern_path(frames)
    }

    /// Defines frames from the top-level `stackFrames` object.
    pub fn define_frames(&mut self, defs: &mut Defs, text: &str) -> Result<(), String> {
        let frames: Vec<(String, FrameDef)> =
            serde_json::from_str::<indexmap_like::Ordered<FrameDef>>(text)
                .map_err(|e| e.to_string())?
                .0;
        for (id, f) in frames {
            if id == crate::export::NO_STACK_SF {
                continue;
            }
            let node = self.node(defs, id);
            let parent = f
                .parent
                .as_ref()
                .map(|p| self.node(defs, frame_key(p.get())));
            let name = defs.intern(f.name.as_deref().unwrap_or(""));
            let module = f.category.as_deref().map(|c| defs.intern(c));
            let frame = defs.stacks.intern_frame(name, module);
            defs.stacks.define(node, parent, frame);
        }
        Ok(())
    }

    /// Gives every frame still undefined (referenced, never listed) the name `?`.
    pub fn close(&mut self, defs: &mut Defs, diag: &mut Diagnostics) {
        let mut missing: Vec<(&str, StackId)> = self
            .sf
            .iter()
            .filter(|(_, &s)| defs.stacks.node(s).is_none())
            .map(|(k, &s)| (&**k, s))
            .collect();
        missing.sort();
        for (key, s) in missing {
            diag.record_detail(
                &d::BAD_STACK_FRAME,
                Location::Nowhere,
                format!("sf {key:?}"),
            );
            let q = defs.intern("?");
            let f = defs.stacks.intern_frame(q, None);
            defs.stacks.define(s, None, f);
        }
    }
}

/// A JSON object read into a list of entries in file order.
mod indexmap_like {
    use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
    use std::fmt;
    use std::marker::PhantomData;

    pub struct Ordered<T>(pub Vec<(String, T)>);

    impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V<T>(PhantomData<T>);
            impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
                type Value = Ordered<T>;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                    let mut v = Vec::new();
                    while let Some(e) = m.next_entry::<String, T>()? {
                        v.push(e);
                    }
                    Ok(Ordered(v))
                }
            }
            d.deserialize_map(V(PhantomData))
        }
    }
}

/// One entry of the top-level `samples` array, kept until the end of the input (it may come
/// before the events that name its thread).
pub struct TopSample {
    pid: Option<IdKey>,
    tid: IdKey,
    ts: Option<i64>,
    sf: Option<String>,
    weight: i64,
    cpu: Option<u32>,
    name: Option<String>,
    pub rounded: bool,
}

#[derive(Deserialize)]
struct RawSample {
    pid: Option<Box<RawValue>>,
    tid: Option<Box<RawValue>>,
    ts: Option<Box<RawValue>>,
    sf: Option<Box<RawValue>>,
    weight: Option<f64>,
    cpu: Option<u32>,
    name: Option<String>,
}

pub fn parse_top_samples(text: &str) -> Result<Vec<TopSample>, String> {
    let raw: Vec<RawSample> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(raw
        .into_iter()
        .map(|s| {
            let w = s.weight.unwrap_or(1.0);
            let weight = w.round() as i64;
            TopSample {
                pid: s.pid.as_deref().map(|p| IdKey::of(Some(p.into())).0),
                tid: IdKey::of(s.tid.as_deref().map(Raw::from)).0,
                ts: s
                    .ts
                    .as_deref()
                    .and_then(|t| micros_to_ns(t.get()))
                    .map(|m| m.value),
                sf: s.sf.as_deref().map(|r| frame_key(r.get())),
                weight,
                cpu: s.cpu,
                name: s.name,
                rounded: weight as f64 != w,
            }
        })
        .collect())
}

impl TopSample {
    pub fn resolve(
        &self,
        defs: &mut Defs,
        ids: &mut Identities,
        stacks: &mut Stacks,
    ) -> Result<Sample, String> {
        let ts = self.ts.ok_or("sample without a numeric ts")?;
        if self.tid == IdKey::Missing {
            return Err("sample without a tid".into());
        }
        let track = match &self.pid {
            Some(p) => ids.thread_track_by_keys(defs, p.clone(), self.tid.clone()),
            None => ids.thread_by_tid(defs, self.tid.clone()),
        };
        // tracex's frame for a sample that has no stack
        let stack = self
            .sf
            .clone()
            .filter(|k| k != crate::export::NO_STACK_SF)
            .map(|k| stacks.node(defs, k));
        let name = self.name.as_deref().map(|n| defs.intern(n));
        Ok(Sample {
            track,
            ts: Some(ts),
            stack,
            weight: self.weight,
            cpu: self.cpu,
            name,
        })
    }
}

/// V8 CPU profiles in `P` events: a `Profile` gives the start time, `ProfileChunk`s give call
/// tree nodes, sampled node ids and the time deltas between samples (µs).
#[derive(Default)]
pub struct V8Profiles {
    profiles: FxHashMap<(ProcessId, String), Profile>,
}

struct Profile {
    time: Option<i64>,
    nodes: FxHashMap<i64, StackId>,
}

#[derive(Deserialize)]
struct ProfileArgs {
    data: Option<ProfileData>,
}

#[derive(Deserialize)]
struct ProfileData {
    #[serde(rename = "startTime")]
    start_time: Option<Box<RawValue>>,
    #[serde(rename = "cpuProfile")]
    cpu_profile: Option<CpuProfile>,
    #[serde(rename = "timeDeltas")]
    time_deltas: Option<Vec<serde_json::Number>>,
}

#[derive(Deserialize)]
struct CpuProfile {
    nodes: Option<Vec<Node>>,
    samples: Option<Vec<i64>>,
}

#[derive(Deserialize)]
struct Node {
    id: i64,
    #[serde(rename = "callFrame")]
    call_frame: CallFrame,
    parent: Option<i64>,
}

#[derive(Deserialize)]
struct CallFrame {
    #[serde(rename = "functionName")]
    function_name: Option<String>,
    url: Option<String>,
    #[serde(rename = "lineNumber")]
    line: Option<i64>,
    #[serde(rename = "columnNumber")]
    column: Option<i64>,
}

fn micros_number(n: &serde_json::Number) -> i64 {
    match n.as_i64() {
        Some(i) => i.saturating_mul(1000),
        None => (n.as_f64().unwrap_or(0.0) * 1000.0).round() as i64,
    }
}

impl V8Profiles {
    /// Handles one `Profile` or `ProfileChunk` event; returns the samples it completes.
    pub fn event(
        &mut self,
        defs: &mut Defs,
        key: (ProcessId, String),
        track: TrackId,
        ts: i64,
        args: Option<Raw<'_>>,
    ) -> Result<Vec<Sample>, String> {
        let args: ProfileArgs = match args {
            Some(a) => serde_json::from_str(a.get()).map_err(|e| e.to_string())?,
            None => return Err("no args".into()),
        };
        let data = args.data.ok_or("no args.data")?;
        let prof = self.profiles.entry(key).or_insert_with(|| Profile {
            time: None,
            nodes: FxHashMap::default(),
        });
        if let Some(st) = data.start_time.as_deref() {
            prof.time = micros_to_ns(st.get()).map(|m| m.value);
        }
        let mut out = Vec::new();
        let Some(cp) = data.cpu_profile else {
            return Ok(out);
        };
        let node_stack = |defs: &mut Defs, nodes: &mut FxHashMap<i64, StackId>, id: i64| {
            *nodes.entry(id).or_insert_with(|| defs.stacks.reserve())
        };
        for n in cp.nodes.unwrap_or_default() {
            let me = node_stack(defs, &mut prof.nodes, n.id);
            let parent = n.parent.map(|p| node_stack(defs, &mut prof.nodes, p));
            let cf = &n.call_frame;
            let fname = match cf.function_name.as_deref() {
                Some("") | None => "(anonymous)",
                Some(f) => f,
            };
            let name = defs.intern(fname);
            let module = match cf.url.as_deref() {
                Some(u) if !u.is_empty() => {
                    let m = match (cf.line, cf.column) {
                        (Some(l), Some(c)) if l >= 0 => format!("{u}:{}:{}", l + 1, c + 1),
                        (Some(l), _) if l >= 0 => format!("{u}:{}", l + 1),
                        _ => u.to_string(),
                    };
                    Some(defs.intern(&m))
                }
                _ => None,
            };
            let frame = defs.stacks.intern_frame(name, module);
            defs.stacks.define(me, parent, frame);
        }
        let samples = cp.samples.unwrap_or_default();
        let deltas = data.time_deltas.unwrap_or_default();
        let mut time = prof.time.unwrap_or(ts);
        for (i, node) in samples.iter().enumerate() {
            time += deltas.get(i).map(micros_number).unwrap_or(0);
            let stack = node_stack(defs, &mut prof.nodes, *node);
            out.push(Sample {
                track,
                ts: Some(time),
                stack: Some(stack),
                weight: 1,
                cpu: None,
                name: None,
            });
        }
        prof.time = Some(time);
        Ok(out)
    }

    /// Gives nodes that samples referenced but no chunk defined the name `?`.
    pub fn close(&mut self, defs: &mut Defs, diag: &mut Diagnostics) {
        for p in self.profiles.values() {
            let mut ids: Vec<_> = p.nodes.iter().collect();
            ids.sort();
            for (id, &s) in ids {
                if defs.stacks.node(s).is_none() {
                    diag.record_detail(
                        &d::BAD_STACK_FRAME,
                        Location::Nowhere,
                        format!("V8 profile node {id}"),
                    );
                    let q = defs.intern("?");
                    let f = defs.stacks.intern_frame(q, None);
                    defs.stacks.define(s, None, f);
                }
            }
        }
    }
}
