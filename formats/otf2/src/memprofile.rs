//! TensorFlow memory profiles (`<host>.memory_profile.json[.gz]`, the JSON form of TensorFlow's
//! `MemoryProfile` proto), written beside a trace as the Chrome→OTF2 reference converter does.
//!
//! Each allocator becomes a thread of a `TF Memory Allocators` process. Each snapshot becomes a
//! slice named after its memory activity (ALLOCATION, DEALLOCATION, ...) from its time to the
//! next snapshot's (the last one has no length), with the activity metadata and aggregation
//! statistics as arguments, and each numeric aggregation statistic a counter recorded on the
//! allocator's location. `timeOffsetPs` is taken on the trace's time base (TensorFlow's trace
//! and memory profile share the profiling session's start) and rounded to the nanosecond.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value as J;
use tracex_ir::event::{CounterValue, Slice};
use tracex_ir::{
    Arg, CounterDef, CounterId, Defs, Error, Event, Location, NamePriority, Num, Process, Result,
    TrackId, Value,
};

/// Statistics that TensorFlow writes as decimal strings (proto int64) and that are counts.
const UNSIGNED: &[&str] = &[
    "stackReservedBytes",
    "heapAllocatedBytes",
    "freeMemoryBytes",
    "peakBytesInUse",
    "requestedBytes",
    "allocationBytes",
    "address",
    "stepId",
];

struct Snapshot {
    ts: i64,
    activity: String,
    args: Vec<(String, Value)>,
    stats: Vec<(String, Num)>,
}

struct Allocator {
    name: String,
    snapshots: Vec<Snapshot>,
}

/// A parsed memory profile.
pub struct MemoryProfile {
    path: PathBuf,
    allocators: Vec<Allocator>,
}

fn bad(path: &Path, what: impl Into<String>) -> Error {
    Error::invalid(
        Location::File(path.display().to_string()),
        format!("not a usable TensorFlow memory profile: {}", what.into()),
    )
}

/// A proto3 JSON number: a number, or a decimal string (int64 fields).
fn number(v: &J) -> Option<Num> {
    match v {
        J::Number(n) => n
            .as_i64()
            .map(Num::Int)
            .or_else(|| n.as_f64().map(Num::Float)),
        J::String(s) => s
            .parse::<i64>()
            .map(Num::Int)
            .ok()
            .or_else(|| s.parse::<f64>().ok().map(Num::Float)),
        _ => None,
    }
}

fn typed(key: &str, v: &J) -> Value {
    if UNSIGNED.contains(&key) {
        let parsed = match v {
            J::String(s) => s.parse::<u64>().ok(),
            J::Number(n) => n.as_u64(),
            _ => None,
        };
        if let Some(u) = parsed {
            return Value::UInt(u);
        }
        // int64 fields can be negative (stepId -1 before the first step)
        if let Some(i) = v.as_str().and_then(|s| s.parse::<i64>().ok()) {
            return Value::Int(i);
        }
    }
    match v {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(*b),
        J::String(s) => Value::Str(s.as_str().into()),
        J::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::UInt(u),
            _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        other => Value::Json(other.to_string().into()),
    }
}

/// Picoseconds → nanoseconds, rounded to nearest.
fn ps_to_ns(ps: Num) -> Option<i64> {
    match ps {
        Num::Int(p) if p >= 0 => Some(p / 1000 + i64::from(p % 1000 >= 500)),
        Num::Float(f) if (0.0..9.2e21).contains(&f) => Some((f / 1000.0).round() as i64),
        _ => None,
    }
}

impl MemoryProfile {
    /// Reads a memory profile (plain or gzip JSON).
    pub fn load(path: &Path) -> Result<MemoryProfile> {
        let raw = std::fs::read(path).map_err(|e| {
            Error::Io(std::io::Error::new(
                e.kind(),
                format!("cannot read the memory profile {}: {e}", path.display()),
            ))
        })?;
        let text = if raw.starts_with(&[0x1f, 0x8b]) {
            let mut s = Vec::new();
            flate2::read::MultiGzDecoder::new(&raw[..])
                .read_to_end(&mut s)
                .map_err(|e| bad(path, format!("gzip: {e}")))?;
            s
        } else {
            raw
        };
        let doc: J = serde_json::from_slice(&text).map_err(|e| bad(path, format!("JSON: {e}")))?;
        let per = doc
            .get("memoryProfilePerAllocator")
            .and_then(J::as_object)
            .ok_or_else(|| bad(path, "no \"memoryProfilePerAllocator\" object"))?;
        let mut allocators = Vec::new();
        for (name, profile) in per {
            let snaps = match profile.get("memoryProfileSnapshots") {
                None => Vec::new(),
                Some(J::Array(a)) => a.iter().collect(),
                Some(_) => {
                    return Err(bad(
                        path,
                        format!("{name}: memoryProfileSnapshots is not an array"),
                    ))
                }
            };
            let mut snapshots = Vec::with_capacity(snaps.len());
            for (i, s) in snaps.into_iter().enumerate() {
                let at = |what: &str| bad(path, format!("allocator {name}, snapshot #{i}: {what}"));
                // proto3 JSON leaves out fields at their default (0, empty).
                let ts = match s.get("timeOffsetPs") {
                    None => 0,
                    Some(v) => number(v)
                        .and_then(ps_to_ns)
                        .ok_or_else(|| at("timeOffsetPs is not a non-negative number"))?,
                };
                let meta = s.get("activityMetadata").and_then(J::as_object);
                let activity = meta
                    .and_then(|m| m.get("memoryActivity"))
                    .and_then(J::as_str)
                    .unwrap_or("UNKNOWN_ACTIVITY")
                    .to_string();
                let mut args: Vec<(String, Value)> = meta
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| k.as_str() != "memoryActivity")
                    .map(|(k, v)| (k.clone(), typed(k, v)))
                    .collect();
                let mut stats = Vec::new();
                if let Some(agg) = s.get("aggregationStats").and_then(J::as_object) {
                    for (k, v) in agg {
                        args.push((k.clone(), typed(k, v)));
                        if let Some(n) = number(v) {
                            stats.push((k.clone(), n));
                        }
                    }
                }
                snapshots.push(Snapshot {
                    ts,
                    activity,
                    args,
                    stats,
                });
            }
            snapshots.sort_by_key(|s| s.ts);
            allocators.push(Allocator {
                name: name.clone(),
                snapshots,
            });
        }
        Ok(MemoryProfile {
            path: path.to_path_buf(),
            allocators,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds the profile's process, threads and counters to `defs`. Returns its events in time
    /// order per allocator, and which thread track each counter is recorded on.
    pub fn emit(&self, defs: &mut Defs) -> (Vec<Event>, Vec<(CounterId, TrackId)>) {
        let mut events = Vec::new();
        let mut placement = Vec::new();
        if self.allocators.is_empty() {
            return (events, placement);
        }
        let pname = defs.intern("TF Memory Allocators");
        let p = defs.add_process(Process {
            name: Some(pname),
            name_priority: NamePriority::Explicit,
            ..Process::default()
        });
        for a in &self.allocators {
            let th = defs.add_thread(p, None, None);
            let name = defs.intern(&a.name);
            defs.set_thread_name(th, name, NamePriority::Explicit);
            let track = defs.thread(th).track;
            let mut counters: Vec<(String, CounterId)> = Vec::new();
            for (i, s) in a.snapshots.iter().enumerate() {
                let end = a.snapshots.get(i + 1).map_or(s.ts, |n| n.ts);
                let mut slice = Slice::new(track, s.ts, end - s.ts, defs.intern(&s.activity));
                slice.args = s
                    .args
                    .iter()
                    .map(|(k, v)| Arg {
                        key: defs.intern(k),
                        value: v.clone(),
                    })
                    .collect();
                events.push(Event::Slice(slice));
                for (k, v) in &s.stats {
                    let c = match counters.iter().find(|(n, _)| n == k) {
                        Some((_, c)) => *c,
                        None => {
                            let unit = k.ends_with("Bytes").then(|| defs.intern("bytes"));
                            let key = defs.intern(k);
                            let c = defs.add_counter(CounterDef {
                                process: Some(p),
                                name: key,
                                series: None,
                                label: Some(name),
                                unit,
                                cat: None,
                            });
                            counters.push((k.clone(), c));
                            placement.push((c, track));
                            c
                        }
                    };
                    events.push(Event::Counter(CounterValue {
                        counter: c,
                        ts: s.ts,
                        value: *v,
                    }));
                }
            }
        }
        (events, placement)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_become_slices_and_counters() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.json");
        std::fs::write(
            &p,
            r#"{"memoryProfilePerAllocator":{"GPU_0_bfc":{"memoryProfileSnapshots":[
              {"timeOffsetPs":"2500","aggregationStats":{"heapAllocatedBytes":"512","fragmentation":0.25},
               "activityMetadata":{"memoryActivity":"DEALLOCATION","address":"99","tfOpName":"b"}},
              {"aggregationStats":{"heapAllocatedBytes":"1024"},
               "activityMetadata":{"memoryActivity":"ALLOCATION","requestedBytes":"1000","tfOpName":"a"}}]}}}"#,
        )
        .unwrap();
        let m = MemoryProfile::load(&p).unwrap();
        let mut defs = Defs::new();
        let (events, placement) = m.emit(&mut defs);
        // sorted by time: the snapshot without timeOffsetPs is at 0
        let slices: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Event::Slice(s) => Some((defs.str(s.name).to_string(), s.ts, s.dur)),
                _ => None,
            })
            .collect();
        assert_eq!(
            slices,
            vec![
                ("ALLOCATION".into(), 0, Some(3)),
                ("DEALLOCATION".into(), 3, Some(0))
            ]
        );
        assert_eq!(placement.len(), 2);
        let Event::Slice(s) = &events[0] else {
            panic!()
        };
        assert!(s
            .args
            .iter()
            .any(|a| defs.str(a.key) == "requestedBytes" && a.value == Value::UInt(1000)));
        let counts = events
            .iter()
            .filter(|e| matches!(e, Event::Counter(_)))
            .count();
        assert_eq!(counts, 3);
    }

    #[test]
    fn bad_profiles_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.json");
        std::fs::write(&p, r#"{"traceEvents":[]}"#).unwrap();
        let e = MemoryProfile::load(&p).err().unwrap().to_string();
        assert!(e.contains("memoryProfilePerAllocator"), "{e}");
        std::fs::write(&p, r#"{"memoryProfilePerAllocator":{"a":{"memoryProfileSnapshots":[{"timeOffsetPs":"-1"}]}}}"#).unwrap();
        let e = MemoryProfile::load(&p).err().unwrap().to_string();
        assert!(e.contains("snapshot #0"), "{e}");
        assert!(MemoryProfile::load(&dir.path().join("missing.json")).is_err());
    }
}
