//! Nsight Systems SQLite exports in the registry.

use tracex_ir::{EventOrder, ImportCtx, Result};
use tracex_nsys::{Activities, ColorScheme};

use super::{Format, InputKind};
use crate::input::Input;
use crate::options::Options;

fn import(input: &mut Input, opts: &Options, ctx: &mut ImportCtx) -> Result<()> {
    let path = input.file_path()?;
    tracex_nsys::import(&path, &opts.nsys, ctx)
}

pub static FORMAT: Format = Format {
    name: tracex_nsys::NAME,
    aliases: &["nsight", "sqlite"],
    description: "Nsight Systems SQLite export (nsys export --type sqlite), nsys 2021-2026",
    extensions: tracex_nsys::EXTENSIONS,
    sniff: tracex_nsys::sniff,
    import: Some(import),
    export: None,
    order: EventOrder::Sorted,
    input: InputKind::File,
    diagnostics: tracex_nsys::DIAGNOSTICS,
    refines: None,
};

/// Nsight Systems options on the command line.
#[derive(clap::Args, Debug, Clone)]
pub struct NsysArgs {
    /// What the nsys importer reads at all, comma-separated (default: all): kernel, memcpy,
    /// memset, sync, cuda-api, graph, cuda-event, nvtx, nvtx-kernel, osrt, samples, sched,
    /// metrics, memory, cublas, cudnn, mpi, ucx, openacc, openmp, overhead, diagnostics; `-name`
    /// leaves one out (`--nsys-activity=-samples,-sched`). The generic --activity filters after
    /// import, for every format
    #[arg(
        long = "nsys-activity",
        value_name = "LIST",
        value_parser = Activities::parse,
        allow_hyphen_values = true
    )]
    pub nsys_activity: Option<Activities>,

    /// Keep only NVTX ranges and marks whose name starts with P (repeatable)
    #[arg(long, value_name = "P")]
    pub nvtx_prefix: Vec<String>,

    /// Colour NVTX ranges by name: '{"regex": "chrome colour name", ...}', first match wins
    #[arg(long, value_name = "JSON", value_parser = ColorScheme::parse)]
    pub nvtx_color_scheme: Option<ColorScheme>,
}

impl NsysArgs {
    pub fn apply(&self, opts: &mut Options) {
        if let Some(a) = self.nsys_activity {
            opts.nsys.activities = a;
        }
        opts.nsys.nvtx_prefixes = self.nvtx_prefix.clone();
        if let Some(c) = &self.nvtx_color_scheme {
            opts.nsys.nvtx_colors = c.clone();
        }
    }
}
