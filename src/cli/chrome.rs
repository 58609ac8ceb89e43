//! Chrome JSON options on the command line, and what they set in `tracex-chrome`'s options.

use tracex_ir::format::Options;

#[derive(clap::Args, Debug, Clone)]
pub struct ChromeArgs {
    /// gzip level for .json.gz and .pftrace.gz outputs (0-9)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub gzip_level: u32,
    /// Write GPU work, CUDA calls and launch flows with the categories, args (stream, device,
    /// correlation) and ac2g flows of PyTorch's Kineto, so that HolisticTraceAnalysis and
    /// TraceLens analyse nsys and CUPTI traces
    #[arg(long)]
    pub kineto: bool,
}

impl ChromeArgs {
    pub fn apply(&self, opts: &mut Options) {
        let chrome = opts.get_mut::<tracex_chrome::ExportOptions>();
        chrome.gzip_level = self.gzip_level;
        chrome.kineto = self.kineto;
    }
}
