//! The OTF2 descriptor: its names, how to recognise, read and write it.

use std::path::{Path, PathBuf};

use tracex_ir::format::{Export, ExportSink, Format, Import, InputKind, Options, Source};
use tracex_ir::io::OutputTarget;
use tracex_ir::{Error, EventOrder, ImportCtx, Result};

use crate::export::output::Layout;
use crate::export::Exporter;
use crate::options::{ExportOptions, ImportOptions};

/// Format name in the registry.
pub const NAME: &str = "otf2";

pub static FORMAT: Format = Format {
    name: NAME,
    aliases: &["scorep", "vampir"],
    description:
        "OTF2 trace archives (Score-P, Vampir): the anchor .otf2 file or the archive directory",
    // the anchor file
    extensions: &[".otf2"],
    sniff: crate::sniff::sniff,
    refines: None,
    diagnostics: crate::diag::DIAGNOSTICS,
    import: Some(Import {
        order: EventOrder::Unsorted,
        input: InputKind::File,
        run: import,
        activities: &[],
        select_activity: None,
    }),
    export: Some(Export {
        create: export,
        paths: output_paths,
    }),
};

fn import(source: &mut dyn Source, opts: &Options, ctx: &mut ImportCtx) -> Result<()> {
    // An archive is several files next to each other: only its own path can name it.
    let Some(path) = source.path() else {
        return Err(Error::Unsupported(
            "an OTF2 archive cannot be read from standard input; give the path of its anchor file (.otf2) or directory".into(),
        ));
    };
    if source.compressed() {
        return Err(Error::Unsupported(format!(
            "{}: OTF2 archives are not gzip files; give the anchor file (.otf2) or the archive directory",
            path.display()
        )));
    }
    crate::import::import(path, &opts.get::<ImportOptions>(), ctx)
}

fn export(target: &OutputTarget, opts: &Options) -> Result<ExportSink> {
    Ok(ExportSink::Bound(Box::new(Exporter::create(
        target,
        &opts.get::<ExportOptions>(),
    )?)))
}

/// The paths an output occupies: `X.otf2` writes `X.otf2`, `X.def` and `X/`; another name is a
/// directory holding `traces.otf2`, `traces.def` and `traces/`.
fn output_paths(out: &Path) -> Vec<PathBuf> {
    Layout::for_path(out).paths()
}
