//! SVG flame graph options on the command line, and what they set in `tracex-flamegraph`'s
//! options. The view and weight are the folded options (`--fold`, `--weight`).

use tracex_ir::format::Options;

#[derive(clap::Args, Debug, Clone)]
pub struct FlamegraphArgs {
    /// Title of an .svg flame graph (default: what the view measures)
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,

    /// Subtitle of an .svg flame graph (default: the inputs, the weight and the total)
    #[arg(long, value_name = "TEXT")]
    pub subtitle: Option<String>,

    /// Draw an .svg flame graph upside down (an icicle graph: roots at the top)
    #[arg(long)]
    pub inverted: bool,
}

impl FlamegraphArgs {
    /// Sets the options; `inputs` name what was measured in the default subtitle.
    pub fn apply(&self, opts: &mut Options, inputs: &[String]) {
        let o = opts.get_mut::<tracex_flamegraph::ExportOptions>();
        o.title = self.title.clone();
        o.subtitle = self.subtitle.clone();
        o.inverted = self.inverted;
        let names: Vec<String> = inputs
            .iter()
            .map(|i| {
                std::path::Path::new(i)
                    .file_name()
                    .map_or_else(|| i.clone(), |n| n.to_string_lossy().into_owned())
            })
            .collect();
        o.source = (!names.is_empty()).then(|| names.join(" + "));
    }
}
