//! `--kineto`: the names PyTorch's Kineto writes, on traces from other producers (nsys, CUPTI),
//! so that HolisticTraceAnalysis and TraceLens analyse them as PyTorch traces. GPU work gets
//! Kineto's categories and the `stream`, `device` and `correlation` args those tools key on; CUDA
//! API calls get `correlation`; launch flows are written as Kineto's `ac2g` flows (their ids are
//! the correlation ids already, see `Defs::flow_id`). What a trace already has is left alone, so
//! a Kineto trace comes out as it went in.

use tracex_ir::kind::{classify, SliceKind};
use tracex_ir::{Arg, Args, Defs, StrId, TrackKind, Value};

/// Kineto's name and category of the flow from a CUDA API call to the GPU work it launched.
pub const FLOW: &str = "ac2g";

/// Argument keys other producers use for a correlation id.
const CORRELATION_KEYS: &[&str] = &["correlation", "correlation_id", "correlationId"];

/// The Kineto category of a slice of `kind`, when it differs from `cat`.
fn category(kind: SliceKind, cat: Option<&str>) -> Option<&'static str> {
    let want = match kind {
        SliceKind::Kernel => "kernel",
        SliceKind::Memcpy => "gpu_memcpy",
        SliceKind::Memset => "gpu_memset",
        SliceKind::Sync => "cuda_sync",
        SliceKind::CudaApi => match cat {
            Some("cuda_driver") => "cuda_driver",
            _ => "cuda_runtime",
        },
        SliceKind::NvtxKernel => "gpu_user_annotation",
        SliceKind::Nvtx => "user_annotation",
        _ => return None,
    };
    (cat != Some(want)).then_some(want)
}

fn has(defs: &Defs, args: &Args, key: &str) -> bool {
    args.iter().any(|a| defs.str(a.key) == key)
}

fn push(defs: &mut Defs, args: &mut Args, key: &str, value: Value) {
    let key = defs.intern(key);
    args.push(Arg { key, value });
}

/// The category and args to write for a slice in Kineto's terms, or `None` when the slice is
/// written as it is.
pub fn slice(
    defs: &mut Defs,
    track: TrackKind,
    cat: Option<StrId>,
    args: &Args,
) -> Option<(Option<StrId>, Args)> {
    let cat_text = cat.map(|c| defs.str(c));
    let kind = classify(cat_text);
    let new_cat = category(kind, cat_text);
    let gpu = matches!(
        kind,
        SliceKind::Kernel | SliceKind::Memcpy | SliceKind::Memset | SliceKind::Sync
    );
    let mut add: Vec<(&str, Value)> = Vec::new();
    if (gpu || kind == SliceKind::CudaApi) && !has(defs, args, "correlation") {
        let corr = args
            .iter()
            .find(|a| CORRELATION_KEYS.contains(&defs.str(a.key)))
            .map(|a| a.value.clone());
        add.extend(corr.map(|v| ("correlation", v)));
    }
    if let (true, TrackKind::GpuStream { device, stream }) = (gpu, track) {
        for (key, v) in [("device", device), ("stream", stream)] {
            if !has(defs, args, key) {
                add.push((key, Value::Int(v as i64)));
            }
        }
    }
    let out = (!add.is_empty()).then(|| {
        let mut a = args.clone();
        for (k, v) in add {
            push(defs, &mut a, k, v);
        }
        a
    });
    if new_cat.is_none() && out.is_none() {
        return None;
    }
    let cat = match new_cat {
        Some(c) => Some(defs.intern(c)),
        None => cat,
    };
    Some((cat, out.unwrap_or_else(|| args.clone())))
}

/// Whether a flow is a launch (a CUDA API call to its GPU work), by its category.
pub fn is_launch(cat: Option<&str>) -> bool {
    matches!(cat, Some("cuda_launch" | FLOW))
}
