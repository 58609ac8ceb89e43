//! IR → SVG flame graph: the folded exporter picks the view and weighs the stacks; inferno
//! draws them. The title says what was measured, the subtitle where it came from, the weight
//! and the total.

use std::io::Write;

use inferno::flamegraph::{self, color::BasicPalette, color::Palette};
use rustc_hash::FxHashMap;
use tracex_folded::export::{fold_name, weight_name, Written};
use tracex_folded::options::{Fold, Weight};
use tracex_ir::io::{OutFile, OutputTarget};
use tracex_ir::{ArgsRead, Defs, Diagnostics, Error, Event, Location, Result, Sink};

use crate::options::ExportOptions;

/// inferno's default picture width and narrowest frame drawn, in pixels.
const IMAGE_WIDTH: f64 = 1200.0;
const MIN_WIDTH: f64 = 0.1;

pub struct Exporter {
    folded: tracex_folded::Exporter,
    folded_opts: tracex_folded::ExportOptions,
    opts: ExportOptions,
    out: Option<OutFile>,
}

impl Exporter {
    pub fn create(
        target: &OutputTarget,
        folded: &tracex_folded::ExportOptions,
        opts: &ExportOptions,
    ) -> Result<Exporter> {
        Ok(Exporter {
            folded: tracex_folded::Exporter::new(folded),
            folded_opts: folded.clone(),
            opts: opts.clone(),
            out: Some(OutFile::create(target)?),
        })
    }
}

/// What a view measures (the title), and the unit of its weight (inferno's count name).
pub fn measured(fold: Fold, weight: Weight) -> (&'static str, &'static str) {
    match (fold, weight) {
        (Fold::Gpu, Weight::GpuNs) => ("GPU time by CPU call stack", "ns"),
        (Fold::Gpu, _) => ("GPU launches by CPU call stack", "launches"),
        (Fold::Timeline, Weight::Ns) => ("Self time by call path", "ns"),
        (Fold::Timeline, Weight::Us) => ("Self time by call path", "µs"),
        (Fold::Timeline, _) => ("Calls by call path", "calls"),
        _ => ("Samples by stack", "samples"),
    }
}

/// A total in its unit, readable: `12.3 ms` for ns, `1,234 samples` otherwise.
fn human_total(total: i64, unit: &str) -> String {
    let ns = match unit {
        "ns" => total as f64,
        "µs" => total as f64 * 1e3,
        _ => return format!("{total} {unit}"),
    };
    let (v, u) = [(1e9, "s"), (1e6, "ms"), (1e3, "µs")]
        .into_iter()
        .find(|(scale, _)| ns.abs() >= *scale)
        .map_or((ns, "ns"), |(scale, u)| (ns / scale, u));
    format!("{v:.3} {u}")
}

/// Lines of folded text whose stack (with everything above it) is too narrow to be drawn.
fn narrow_stacks(text: &str, total: i64) -> u64 {
    if total <= 0 {
        return 0;
    }
    let mut width: FxHashMap<&str, i64> = FxHashMap::default();
    let stacks: Vec<(&str, i64)> = text
        .lines()
        .filter_map(|l| {
            let (stack, w) = l.rsplit_once(' ')?;
            // a differential line is `stack before after`: the picture is drawn by `after`
            let stack = stack.rsplit_once(' ').map_or(stack, |(s, _)| s);
            Some((stack, w.parse().ok()?))
        })
        .collect();
    for &(stack, w) in &stacks {
        for (i, _) in stack.match_indices(';') {
            *width.entry(&stack[..i]).or_default() += w;
        }
        *width.entry(stack).or_default() += w;
    }
    let min = MIN_WIDTH / IMAGE_WIDTH * total as f64;
    stacks
        .iter()
        .filter(|(s, _)| (width[s] as f64) < min)
        .count() as u64
}

impl Sink for Exporter {
    fn event(&mut self, defs: &Defs, diag: &mut Diagnostics, event: Event) -> Result<()> {
        self.folded.event(defs, diag, event)
    }

    fn args_read(&self) -> ArgsRead {
        self.folded.args_read()
    }

    fn unordered(&mut self) -> bool {
        self.folded.unordered()
    }

    fn begin_input(&mut self) {
        self.folded.begin_input()
    }

    fn offsets(&mut self, offsets: &[i64]) {
        self.folded.offsets(offsets)
    }

    fn finish(&mut self, defs: &Defs, diag: &mut Diagnostics) -> Result<()> {
        let mut lines = Vec::new();
        let (fold, weight, written) = self.folded.finish_into(defs, diag, &mut lines)?;
        let text = String::from_utf8(lines)
            .map_err(|_| Error::Unsupported("a frame name is not UTF-8".into()))?;
        let Written { lines, total } = written;
        let (title, unit) = measured(fold, weight);
        let mut o = flamegraph::Options::default();
        o.title = self.opts.title.clone().unwrap_or_else(|| title.to_string());
        o.subtitle = Some(self.opts.subtitle.clone().unwrap_or_else(|| {
            let mut s = String::new();
            if let Some(src) = &self.opts.source {
                s.push_str(src);
                s.push_str(" · ");
            }
            s.push_str(&format!(
                "{} view, --weight {} · {lines} stacks, total {}",
                fold_name(fold),
                weight_name(weight),
                human_total(total, unit)
            ));
            s
        }));
        o.count_name = unit.to_string();
        o.name_type = if fold == Fold::Gpu {
            "Frame:"
        } else {
            "Function:"
        }
        .to_string();
        // colours from the frame names, so the same input draws the same picture
        o.hash = true;
        if fold == Fold::Gpu {
            o.colors = Palette::Basic(BasicPalette::Aqua);
        }
        if self.opts.inverted {
            o.direction = flamegraph::Direction::Inverted;
        }
        diag.record_n(
            &crate::diag::FLAMEGRAPH_NARROW_FRAMES,
            narrow_stacks(&text, total),
            Location::Nowhere,
            None::<String>,
        );
        let mut out = self.out.take().expect("finish once");
        flamegraph::from_lines(&mut o, text.lines(), &mut out)?;
        out.flush()?;
        out.commit()?;
        if self.folded_opts.summary {
            if let Some(s) = self.folded.summary() {
                eprint!("{}", s.render());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_read_in_their_unit() {
        assert_eq!(human_total(12_345_678, "ns"), "12.346 ms");
        assert_eq!(human_total(999, "ns"), "999.000 ns");
        assert_eq!(human_total(2_500, "µs"), "2.500 ms");
        assert_eq!(human_total(42, "samples"), "42 samples");
    }

    #[test]
    fn narrow_stacks_count_whole_subtrees() {
        // b is narrow by itself but a;b;c makes its frame wide; d is narrow
        let text = "a;b 1\na;b;c 100000\nd 1\n";
        assert_eq!(narrow_stacks(text, 100_002), 1);
        assert_eq!(narrow_stacks("x 1 2\n", 2), 0);
    }
}
