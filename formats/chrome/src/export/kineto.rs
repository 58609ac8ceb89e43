//! `--kineto`: the names PyTorch's Kineto writes, on traces from other producers (nsys, CUPTI),
//! so that HolisticTraceAnalysis and TraceLens analyse them as PyTorch traces. GPU work gets
//! Kineto's categories and the `stream`, `device` and `correlation` args those tools key on; CUDA
//! API calls get `correlation`; launch flows are written as Kineto's `ac2g` flows (their ids are
//! the correlation ids already, see `Defs::flow_id`). What a trace already has is left alone, so
//! a Kineto trace comes out as it went in.

use tracex_ir::kind::{classify, SliceKind};
use tracex_ir::{Args, Defs, StrId, TrackKind, Value};

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

/// What `--kineto` changes on a slice: its category, and args appended to its own.
pub struct KinetoSlice {
    pub cat: Option<&'static str>,
    pub extra: Vec<(&'static str, Value)>,
}

/// The category and args to write for a slice in Kineto's terms, or `None` when the slice is
/// written as it is.
pub fn slice(
    defs: &Defs,
    track: TrackKind,
    cat: Option<StrId>,
    args: &Args,
) -> Option<KinetoSlice> {
    let cat_text = defs.opt_str(cat);
    let kind = classify(cat_text);
    let new_cat = category(kind, cat_text);
    let gpu = matches!(
        kind,
        SliceKind::Kernel | SliceKind::Memcpy | SliceKind::Memset | SliceKind::Sync
    );
    let mut extra: Vec<(&'static str, Value)> = Vec::new();
    if (gpu || kind == SliceKind::CudaApi) && !has(defs, args, "correlation") {
        let corr = args
            .iter()
            .find(|a| CORRELATION_KEYS.contains(&defs.str(a.key)))
            .map(|a| a.value.clone());
        extra.extend(corr.map(|v| ("correlation", v)));
    }
    if let (true, TrackKind::GpuStream { device, stream }) = (gpu, track) {
        for (key, v) in [("device", device), ("stream", stream)] {
            if !has(defs, args, key) {
                extra.push((key, Value::Int(v as i64)));
            }
        }
    }
    (new_cat.is_some() || !extra.is_empty()).then_some(KinetoSlice {
        cat: new_cat,
        extra,
    })
}

/// Whether a flow is a launch (a CUDA API call to its GPU work), by its category.
pub fn is_launch(cat: Option<&str>) -> bool {
    matches!(cat, Some("cuda_launch" | FLOW))
}
