//! CUPTI-derived Chrome JSON (`cupti_trace_parser.py`, `cupti_to_chrome_trace.py`): read by the
//! Chrome importer, with CUPTI's meaning added on the way through: `Runtime: `/`Driver: `/
//! `Kernel: ` name prefixes removed, categories mapped to tracex's, kernels and copies (which
//! have no pid/tid) moved to a device stream track, and correlation ids turned into flows.

use std::io::Read;

use rustc_hash::FxHashMap;
use tracex_ir::kind::cat;
use tracex_ir::{Defs, Event, ImportCtx, Location, Result, StrId, Value};

use super::categories::{CAT_MEMORY, CAT_OVERHEAD};
use super::correlation::Correlation;
use super::devices::{Devices, UNKNOWN_STREAM};
use super::tally::Tally;
use crate::diag as d;

/// Reads CUPTI Chrome JSON from `reader` into `ctx`.
pub fn import<R: Read + Send>(reader: R, ctx: &mut ImportCtx) -> Result<()> {
    let mut state = State {
        corr: Correlation::sized_for(ctx.progress.total()),
        ..State::default()
    };
    // CUPTI's default timestamps are Unix-epoch ns; known before the first event, so that
    // exporters can write times from an origin (a `baseTimeNanoseconds` in the input wins)
    ctx.defs.clock.origin_unix_ns = Some(0);
    let mut index = 0u64;
    ctx.filtered(
        FILTER_READS,
        |defs, _, ev| {
            index += 1;
            state.map(defs, ev, index - 1)
        },
        |inner| tracex_chrome::import(reader, &Default::default(), inner),
    )?;
    std::mem::take(&mut state.no_stream).record(ctx, &d::JSON_NO_STREAM, Location::Event);
    std::mem::take(&mut state.corr).finish(ctx, Location::Event)
}

/// The args this filter reads whatever the output reads: the correlation (for flows) and the
/// kernels' device and stream (for their track). `cbid` is turned into a number only where
/// the output reads it.
const FILTER_READS: &[&str] = &["correlationId", "deviceId", "streamId"];

#[derive(Default)]
struct State {
    devices: Devices,
    corr: Correlation,
    keys: Option<Keys>,
    renamed: FxHashMap<(StrId, StrId), Option<Renamed>>,
    /// Kernels and copies without device or stream: every one of them in most CUPTI JSON.
    no_stream: Tally,
}

/// Interned names this filter compares against.
#[derive(Clone, Copy)]
struct Keys {
    correlation: StrId,
    cbid: StrId,
    device: StrId,
    stream: StrId,
}

fn int_arg(args: &[tracex_ir::Arg], key: StrId) -> Option<i64> {
    args.iter()
        .find(|a| a.key == key)
        .and_then(|a| match &a.value {
            Value::Int(i) => Some(*i),
            Value::UInt(u) => i64::try_from(*u).ok(),
            Value::Str(s) => s.parse().ok(),
            _ => None,
        })
}

/// What a CUPTI slice of one (category, name) becomes.
#[derive(Clone, Copy)]
struct Renamed {
    category: &'static str,
    cat: StrId,
    name: StrId,
}

impl State {
    /// The tracex category and the name without the converter's prefix, for CUPTI categories
    /// (computed once per distinct name: a trace repeats a few names millions of times).
    fn rename(&mut self, defs: &mut Defs, cat: Option<StrId>, name: StrId) -> Option<Renamed> {
        let cat = cat?;
        if let Some(r) = self.renamed.get(&(cat, name)) {
            return *r;
        }
        let (category, prefix) = match defs.str(cat) {
            "CUDA_Runtime" => (cat::CUDA_RUNTIME, "Runtime: "),
            "CUDA_Driver" => (cat::CUDA_DRIVER, "Driver: "),
            "GPU_Kernel" => (cat::KERNEL, "Kernel: "),
            "MemCopy" => (cat::MEMCPY, "MemCopy: "),
            "Overhead" => (CAT_OVERHEAD, "Overhead: "),
            _ => {
                self.renamed.insert((cat, name), None);
                return None;
            }
        };
        let text = defs.str(name);
        let text = text.strip_prefix(prefix).unwrap_or(text);
        let text = match category {
            cat::MEMCPY => format!("Memcpy {text}"),
            _ => text.to_string(),
        };
        let r = Renamed {
            category,
            cat: defs.intern(category),
            name: defs.intern(&text),
        };
        self.renamed.insert((cat, name), Some(r));
        Some(r)
    }

    fn keys(&mut self, defs: &mut Defs) -> Keys {
        *self.keys.get_or_insert_with(|| Keys {
            correlation: defs.intern("correlationId"),
            cbid: defs.intern("cbid"),
            device: defs.intern("deviceId"),
            stream: defs.intern("streamId"),
        })
    }

    fn map(&mut self, defs: &mut Defs, ev: Event, index: u64) -> Result<Option<Event>> {
        let k = self.keys(defs);
        match ev {
            Event::Slice(mut s) => {
                let Some(r) = self.rename(defs, s.cat, s.name) else {
                    return Ok(Some(Event::Slice(s)));
                };
                let new_cat = r.category;
                s.name = r.name;
                s.cat = Some(r.cat);
                // cupti_trace_parser.py writes cbid as a string; the text has a number.
                if let Some(a) = s.args.iter_mut().find(|a| a.key == k.cbid) {
                    if let Value::Str(t) = &a.value {
                        if let Ok(i) = t.parse::<i64>() {
                            a.value = Value::Int(i);
                        }
                    }
                }
                let correlation = int_arg(&s.args, k.correlation)
                    .filter(|&c| c > 0)
                    .map(|c| c as u64);
                match new_cat {
                    cat::CUDA_RUNTIME | cat::CUDA_DRIVER => {
                        if let Some(id) = correlation {
                            self.corr.call(id, s.track, s.ts, index);
                        }
                        Ok(Some(Event::Slice(s)))
                    }
                    cat::KERNEL | cat::MEMCPY => {
                        let device = int_arg(&s.args, k.device);
                        let stream = int_arg(&s.args, k.stream);
                        if device.is_none() || stream.is_none() {
                            self.no_stream.add(index, || None);
                        }
                        let stream = stream
                            .and_then(|s| u32::try_from(s).ok())
                            .unwrap_or(UNKNOWN_STREAM);
                        s.track = self
                            .devices
                            .stream(defs, device.unwrap_or(0) as u32, stream);
                        if let Some(id) = correlation {
                            self.corr.work(id, s.track, s.ts, index);
                        }
                        Ok(Some(Event::Slice(s)))
                    }
                    _ => Ok(Some(Event::Slice(s))),
                }
            }
            Event::Instant(mut i) if defs.opt_str(i.cat) == Some("Memory") => {
                let name = defs.str(i.name);
                let name = name.strip_prefix("Memory: ").unwrap_or(name).to_string();
                i.name = defs.intern(&name);
                i.cat = Some(defs.intern(CAT_MEMORY));
                Ok(Some(Event::Instant(i)))
            }
            other => Ok(Some(other)),
        }
    }
}
