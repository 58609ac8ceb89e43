//! The raw text of the CUPTI injection library (`helper_cupti_activity.h` printers): one record
//! per line, continuation lines indented, log lines in between. Times are exact ns.

use std::io::Read;

use rustc_hash::FxHashMap;
use tracex_ir::diag::kinds as ir_kinds;
use tracex_ir::kind::cat;
use tracex_ir::{
    Arg, Args, Defs, Event, ImportCtx, Instant, Location, NamePriority, Process, ProcessId, Result,
    Slice, TrackId, Value,
};

use super::categories::{CAT_MEMORY, CAT_OVERHEAD};
use super::correlation::Correlation;
use super::devices::{Devices, UNKNOWN_STREAM};
use super::record::Record;
use super::records::{self, Item};
use crate::diag as d;

/// Reads CUPTI text records from `reader` into `ctx`: the lines are read and the records
/// parsed on a thread of their own ([`records`]).
pub fn import<R: Read + Send>(reader: R, ctx: &mut ImportCtx) -> Result<()> {
    let mut imp = TextImporter {
        corr: Correlation::sized_for(ctx.progress.total()),
        ..TextImporter::default()
    };
    // CUPTI's default timestamps are Unix-epoch ns; known before the first event, so that
    // exporters can write times from an origin
    ctx.defs.clock.origin_unix_ns = Some(0);
    records::records(reader, |item, batch, fields| match item {
        Item::Skipped(kind, no) => {
            ctx.diag.record(kind, Location::Line(*no));
            Ok(())
        }
        Item::Record {
            line,
            parsed: Err(why),
        } => {
            ctx.diag
                .record_detail(&d::BAD_RECORD, Location::Line(*line), why.clone());
            Ok(())
        }
        Item::Record {
            line,
            parsed: Ok(parsed),
        } => imp.map(ctx, &parsed.record(batch, fields), *line),
    })?;
    std::mem::take(&mut imp.corr).finish(ctx, Location::Line)
}

#[derive(Default)]
struct TextImporter {
    processes: FxHashMap<i64, ProcessId>,
    threads: FxHashMap<(i64, i64), TrackId>,
    overhead: Option<ProcessId>,
    overhead_threads: FxHashMap<i64, TrackId>,
    devices: Devices,
    corr: Correlation,
}

/// Keys that become part of the slice itself rather than args.
const CONSUMED: &[&str] = &["", "duration", "processId", "threadId"];

/// A field value as an arg: integers as numbers, `[ 1, 2, 3 ]` as a JSON array (interned: a
/// kernel's grid and block shapes repeat on every kernel), quotes removed.
fn value(defs: &mut Defs, v: &str) -> Value {
    if let Ok(i) = v.parse::<i64>() {
        return Value::Int(i);
    }
    if let Ok(u) = v.parse::<u64>() {
        return Value::UInt(u);
    }
    match int_array(v) {
        Some(json) => Value::JsonSym(defs.intern(&json)),
        None => Value::str(v.trim_matches('"')),
    }
}

/// `[ 1, 2, 3 ]` as the JSON text `[1,2,3]`, when every item is an integer. Written in one
/// string: collecting, joining and formatting the items was a quarter of the importing thread
/// of a GPU merge from CUPTI text (three arrays per kernel).
fn int_array(v: &str) -> Option<String> {
    let inner = v.strip_prefix('[')?.strip_suffix(']')?;
    let mut json = String::with_capacity(inner.len() + 2);
    json.push('[');
    for (k, item) in inner.split(',').enumerate() {
        let item = item.trim();
        item.parse::<i64>().ok()?;
        if k > 0 {
            json.push(',');
        }
        json.push_str(item);
    }
    json.push(']');
    Some(json)
}

impl TextImporter {
    /// The args of a record: its fields but those in [`CONSUMED`], those in `skip` and those
    /// the output does not read.
    fn args(ctx: &mut ImportCtx, rec: &Record, skip: &[&str]) -> Args {
        let read = ctx.args_read();
        // what the output reads first: a flame graph reads one key of a kernel's sixteen
        rec.fields
            .iter()
            .filter(|f| read.reads(f.key))
            .filter(|f| !CONSUMED.contains(&f.key) && !skip.contains(&f.key))
            .map(|f| Arg {
                key: ctx.defs.intern(f.key),
                value: value(ctx.defs, f.value),
            })
            .collect()
    }

    /// Maps one record; what makes it unusable is counted as `cupti_bad_record`.
    fn map(&mut self, ctx: &mut ImportCtx, rec: &Record, line: u64) -> Result<()> {
        let at = Location::Line(line);
        let bad = |ctx: &mut ImportCtx, why: String| {
            ctx.diag.record_detail(&d::BAD_RECORD, at.clone(), why);
            Ok(())
        };
        let (start, end) = match rec.times[..] {
            [s, e] => (s, e),
            [t] => (t, t),
            _ => return bad(ctx, format!("{}: expected one or two times", rec.kind)),
        };
        let emit = |ctx: &mut ImportCtx, ev: Event| ctx.emit(ev);
        match rec.kind {
            "RUNTIME" | "DRIVER" => {
                let Some(name) = rec.name() else {
                    return bad(ctx, format!("{}: a call without a name", rec.kind));
                };
                let (Some(pid), Some(tid)) = (rec.int("processId"), rec.int("threadId")) else {
                    return bad(ctx, format!("{}: no processId or threadId", rec.kind));
                };
                let track = self.thread(ctx, pid, tid);
                let category = if rec.kind == "RUNTIME" {
                    cat::CUDA_RUNTIME
                } else {
                    cat::CUDA_DRIVER
                };
                let s = Self::slice(ctx, rec, track, start, end, name, category, &[]);
                if let Some(id) = rec.int("correlationId").filter(|&c| c > 0) {
                    self.corr.call(id as u64, track, start, line);
                }
                emit(ctx, Event::Slice(s))
            }
            "CONCURRENT_KERNEL" | "KERNEL" | "MEMCPY" | "MEMCPY2" | "MEMSET" => {
                let (category, name) = match rec.kind {
                    "MEMCPY" | "MEMCPY2" => {
                        (cat::MEMCPY, format!("Memcpy {}", rec.label.unwrap_or("")))
                    }
                    "MEMSET" => (cat::MEMSET, "Memset".to_string()),
                    _ => match rec.name() {
                        Some(n) => (cat::KERNEL, n.to_string()),
                        None => return bad(ctx, format!("{}: no kernel name", rec.kind)),
                    },
                };
                let track = match (rec.int("deviceId"), rec.int("streamId")) {
                    (Some(dev), Some(stream)) => {
                        let stream = u32::try_from(stream).unwrap_or(UNKNOWN_STREAM);
                        self.devices.stream(ctx.defs, dev as u32, stream)
                    }
                    _ => {
                        ctx.diag.record(&d::NO_DEVICE, at.clone());
                        self.devices.stream(ctx.defs, 0, UNKNOWN_STREAM)
                    }
                };
                let s = Self::slice(ctx, rec, track, start, end, &name, category, &[]);
                if let Some(id) = rec.int("correlationId").filter(|&c| c > 0) {
                    self.corr.work(id as u64, track, start, line);
                }
                emit(ctx, Event::Slice(s))
            }
            "MEMORY2" | "MEMORY" => {
                let op = rec.get("memoryOperationType").unwrap_or("MEMORY");
                let name = match rec.get("memoryKind") {
                    Some(k) => format!("{op} ({k})"),
                    None => op.to_string(),
                };
                let device = rec.int("deviceId").unwrap_or(0) as u32;
                let track = self.devices.process_track(ctx.defs, device);
                let i = Instant {
                    track,
                    ts: start,
                    name: ctx.defs.intern(&name),
                    cat: Some(ctx.defs.intern(CAT_MEMORY)),
                    args: Self::args(ctx, rec, &[]),
                    stack: None,
                    color: None,
                };
                emit(ctx, Event::Instant(i))
            }
            "OVERHEAD" => {
                let kind = rec.label.unwrap_or("OVERHEAD");
                let track = self.overhead_thread(ctx, rec.int("id").unwrap_or(0));
                let mut s = Self::slice(
                    ctx,
                    rec,
                    track,
                    start,
                    end,
                    kind,
                    CAT_OVERHEAD,
                    &["id", "correlation id"],
                );
                let mut extra = vec![("type", Value::str(kind))];
                if let Some(target) = rec.fields.iter().find(|f| f.key.is_empty()) {
                    extra.push(("target", Value::str(target.value)));
                }
                if let Some(c) = rec.int("correlation id") {
                    extra.push(("correlationId", Value::Int(c)));
                }
                for (k, v) in extra {
                    s.args.push(Arg {
                        key: ctx.defs.intern(k),
                        value: v,
                    });
                }
                emit(ctx, Event::Slice(s))
            }
            other => {
                ctx.diag
                    .record_detail(&d::UNKNOWN_RECORD, at, other.to_string());
                Ok(())
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn slice(
        ctx: &mut ImportCtx,
        rec: &Record,
        track: TrackId,
        start: i64,
        end: i64,
        name: &str,
        category: &str,
        skip: &[&str],
    ) -> Slice {
        let name = ctx.defs.intern(name);
        let mut s = Slice::new(track, start, (end - start).max(0), name);
        s.cat = Some(ctx.defs.intern(category));
        s.args = Self::args(ctx, rec, skip);
        if end < start {
            ctx.diag
                .record(&ir_kinds::SLICE_NEGATIVE_DURATION, Location::Nowhere);
            s.args.push(Arg {
                key: ctx.defs.intern("tracex_original_dur_ns"),
                value: Value::Int(end - start),
            });
        }
        s
    }

    fn thread(&mut self, ctx: &mut ImportCtx, pid: i64, tid: i64) -> TrackId {
        if let Some(&t) = self.threads.get(&(pid, tid)) {
            return t;
        }
        let p = *self.processes.entry(pid).or_insert_with(|| {
            ctx.defs.add_process(Process {
                os_pid: Some(pid),
                ..Process::default()
            })
        });
        let th = ctx.defs.add_thread(p, Some(tid), None);
        let t = ctx.defs.thread(th).track;
        self.threads.insert((pid, tid), t);
        t
    }

    /// CUPTI's own overhead, on threads of a `CUPTI_Overhead` process (as the JSON converter
    /// lays it out): overhead records carry a thread id but no process.
    fn overhead_thread(&mut self, ctx: &mut ImportCtx, id: i64) -> TrackId {
        if let Some(&t) = self.overhead_threads.get(&id) {
            return t;
        }
        let p = *self.overhead.get_or_insert_with(|| {
            let label = ctx.defs.intern("CUPTI_Overhead");
            let p = ctx.defs.add_process(Process {
                label: Some(label),
                ..Process::default()
            });
            ctx.defs.set_process_name(p, label, NamePriority::Inferred);
            p
        });
        let th = ctx.defs.add_thread(p, Some(id), None);
        let t = ctx.defs.thread(th).track;
        self.overhead_threads.insert(id, t);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_arrays_become_json_as_their_items_joined() {
        // the items trimmed and joined with commas, as the records' printers space them
        let joined = |v: &str| {
            let inner = v.strip_prefix('[')?.strip_suffix(']')?;
            let items: Vec<&str> = inner.split(',').map(str::trim).collect();
            (items.iter().all(|i| i.parse::<i64>().is_ok()))
                .then(|| format!("[{}]", items.join(",")))
        };
        for v in [
            "[ 64, 1, 1 ]",
            "[1]",
            "[ -3,  9223372036854775807 ]",
            "[]",
            "[ ]",
            "[ 1, , 2 ]",
            "[ 1, x ]",
            "[ 1, 2.5 ]",
            "[ 18446744073709551615 ]",
            "[ 1, 2",
            "(static 0, dynamic 0)",
        ] {
            assert_eq!(int_array(v), joined(v), "{v}");
        }
        assert_eq!(int_array("[ 64, 1, 1 ]").as_deref(), Some("[64,1,1]"));
        let mut defs = Defs::new();
        match value(&mut defs, "[ 32, 1, 1 ]") {
            Value::JsonSym(id) => assert_eq!(defs.str(id), "[32,1,1]"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(value(&mut defs, "\"HtoD\""), Value::Str(s) if &*s == "HtoD"));
        assert!(matches!(value(&mut defs, "-7"), Value::Int(-7)));
        assert!(matches!(
            value(&mut defs, "18446744073709551615"),
            Value::UInt(u64::MAX)
        ));
    }
}
