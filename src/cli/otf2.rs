//! OTF2 options on the command line, and what they set in `tracex-otf2`'s options.

use std::path::PathBuf;

use tracex_ir::format::Options;

#[derive(clap::Args, Debug, Clone)]
pub struct Otf2Args {
    /// TensorFlow memory profile (*.memory_profile.json[.gz]) to write beside the trace
    /// (each allocator as a location with its memory activities and statistics)
    #[arg(long, value_name = "FILE")]
    pub memory_profile: Option<PathBuf>,
}

impl Otf2Args {
    pub fn apply(&self, opts: &mut Options) {
        opts.get_mut::<tracex_otf2::ExportOptions>().memory_profile = self.memory_profile.clone();
    }
}
