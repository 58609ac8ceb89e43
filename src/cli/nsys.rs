//! Nsight Systems options on the command line, and what they set in `tracex-nsys`'s options.
//! (`--activity`, common to every format, reaches nsys through its descriptor.)

use tracex_ir::format::Options;
use tracex_nsys::{ColorScheme, ImportOptions};

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
        let o = opts.get_mut::<ImportOptions>();
        o.nvtx_prefixes = self.nvtx_prefix.clone();
        if let Some(c) = &self.nvtx_color_scheme {
            o.nvtx_colors = c.clone();
        }
    }
}
