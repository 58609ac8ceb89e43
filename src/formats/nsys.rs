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
    select_activity: Some(select_activity),
};

/// `--activity` words as nsys tables, so the importer reads only what is asked for. Words of
/// the generic filter stand for groups of tables.
fn select_activity(words: &[String], opts: &mut Options) -> Result<(), String> {
    let mut list = Vec::new();
    for w in words {
        let (minus, word) = match w.strip_prefix('-') {
            Some(rest) => ("-", rest),
            None => ("", w.as_str()),
        };
        let group: &[&str] = match word {
            "counters" => &["metrics", "memory"],
            "library" => &["cublas", "cudnn", "openacc", "openmp", "ucx"],
            "instants" => &["sched", "cuda-event", "diagnostics"],
            "other" => &["overhead", "graph"],
            // flows come with the calls and the GPU work they link
            "flows" => &[],
            _ => &[],
        };
        let tables: Vec<&str> = match group {
            [] if word != "flows" => vec![word],
            g => g.to_vec(),
        };
        list.extend(tables.iter().map(|t| format!("{minus}{t}")));
    }
    if !list.is_empty() {
        opts.nsys.activities = Activities::parse(&list.join(","))?;
    }
    Ok(())
}

/// Nsight Systems options on the command line.
#[derive(clap::Args, Debug, Clone)]
pub struct NsysArgs {
    /// Keep only NVTX ranges and marks whose name starts with P (repeatable)
    #[arg(long, value_name = "P")]
    pub nvtx_prefix: Vec<String>,

    /// Colour NVTX ranges by name: '{"regex": "chrome colour name", ...}', first match wins
    #[arg(long, value_name = "JSON", value_parser = ColorScheme::parse)]
    pub nvtx_color_scheme: Option<ColorScheme>,
}

impl NsysArgs {
    pub fn apply(&self, opts: &mut Options) {
        opts.nsys.nvtx_prefixes = self.nvtx_prefix.clone();
        if let Some(c) = &self.nvtx_color_scheme {
            opts.nsys.nvtx_colors = c.clone();
        }
    }
}
