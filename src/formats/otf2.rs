//! OTF2 archives in the registry (behind the default `otf2` feature: needs libotf2).

use std::path::{Path, PathBuf};

use tracex_ir::io::OutputTarget;
use tracex_ir::{Error, EventOrder, ImportCtx, Result, Sink};

use super::{Format, InputKind};
use crate::input::Input;
use crate::options::Options;

fn import(input: &mut Input, opts: &Options, ctx: &mut ImportCtx) -> Result<()> {
    // An archive is several files next to each other: only a path can name it.
    let Some(path) = input.path.clone() else {
        return Err(Error::Unsupported(
            "an OTF2 archive cannot be read from standard input; give the path of its anchor file (.otf2) or directory".into(),
        ));
    };
    if input.compressed {
        return Err(Error::Unsupported(format!(
            "{}: OTF2 archives are not gzip files; give the anchor file (.otf2) or the archive directory",
            path.display()
        )));
    }
    tracex_otf2::import(&path, &opts.otf2_import, ctx)
}

fn export(target: &OutputTarget, opts: &Options) -> Result<Box<dyn Sink>> {
    match target {
        OutputTarget::Path(p) => Ok(Box::new(tracex_otf2::Exporter::create(
            p,
            &opts.otf2_export,
        )?)),
        OutputTarget::Stdout => Err(Error::Unsupported(
            "an OTF2 archive is several files and cannot be written to standard output".into(),
        )),
    }
}

/// The paths an OTF2 output occupies: `X.otf2` writes `X.otf2`, `X.def` and `X/`; another name
/// is a directory holding `traces.otf2`, `traces.def` and `traces/`.
pub fn output_paths(out: &Path) -> Vec<PathBuf> {
    tracex_otf2::Layout::for_path(out).paths()
}

pub static FORMAT: Format = Format {
    name: tracex_otf2::NAME,
    aliases: &["scorep", "vampir"],
    description:
        "OTF2 trace archives (Score-P, Vampir): the anchor .otf2 file or the archive directory",
    extensions: tracex_otf2::EXTENSIONS,
    sniff: tracex_otf2::sniff,
    import: Some(import),
    export: Some(export),
    order: EventOrder::Unsorted,
    input: InputKind::File,
    diagnostics: tracex_otf2::DIAGNOSTICS,
    refines: None,
    select_activity: None,
};

/// OTF2 options on the command line.
#[derive(clap::Args, Debug, Clone)]
pub struct Otf2Args {
    /// TensorFlow memory profile (*.memory_profile.json[.gz]) to write beside the trace
    /// (each allocator as a location with its memory activities and statistics)
    #[arg(long, value_name = "FILE")]
    pub memory_profile: Option<PathBuf>,
}

impl Otf2Args {
    pub fn apply(&self, opts: &mut Options) {
        opts.otf2_export.memory_profile = self.memory_profile.clone();
    }
}
