//! Which rows a statistics table has: event patterns, kinds, top-N, and the varying parameter
//! taken from file names.

use std::collections::BTreeMap;

use anyhow::{bail, Context};
use regex::Regex;
use tracex_ir::kind::SliceKind;

use super::collect::TraceStats;
use super::summary::{mean_spread, Stat, Summary};

const KINDS: &[SliceKind] = &[
    SliceKind::CudaApi,
    SliceKind::Kernel,
    SliceKind::Memcpy,
    SliceKind::Memset,
    SliceKind::Sync,
    SliceKind::Nvtx,
    SliceKind::NvtxKernel,
    SliceKind::Osrt,
    SliceKind::Mpi,
    SliceKind::Library,
    SliceKind::Other,
];

/// Decides which row(s) a (kind, name) counts in.
pub struct Matcher {
    patterns: Vec<(String, Regex)>,
    by_name: bool,
    kinds: Option<Vec<SliceKind>>,
}

/// A glob (`*`, `?`) as an anchored regular expression.
fn glob_regex(glob: &str) -> String {
    let mut re = String::from("^");
    for c in glob.chars() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    re
}

impl Matcher {
    pub fn new(
        events: &[String],
        glob: bool,
        by_name: bool,
        kinds: &[String],
    ) -> anyhow::Result<Matcher> {
        let patterns = events
            .iter()
            .map(|p| {
                let re = if glob { glob_regex(p) } else { p.clone() };
                Regex::new(&re)
                    .map(|r| (p.clone(), r))
                    .with_context(|| format!("bad event pattern {p:?}"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let kinds = if kinds.is_empty() {
            None
        } else {
            let mut v = Vec::new();
            for k in kinds {
                match KINDS.iter().find(|x| x.name() == k.as_str()) {
                    Some(x) => v.push(*x),
                    None => bail!(
                        "unknown kind {k:?} (one of: {})",
                        KINDS
                            .iter()
                            .map(|k| k.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }
            }
            Some(v)
        };
        Ok(Matcher {
            patterns,
            by_name,
            kinds,
        })
    }

    pub fn has_patterns(&self) -> bool {
        !self.patterns.is_empty()
    }

    fn kind_ok(&self, kind: SliceKind) -> bool {
        self.kinds.as_ref().is_none_or(|ks| ks.contains(&kind))
    }

    /// The labels of the rows a name counts in (the name itself without patterns).
    pub fn labels(&self, kind: SliceKind, name: &str) -> Vec<String> {
        if !self.kind_ok(kind) {
            return Vec::new();
        }
        if self.patterns.is_empty() {
            return vec![name.to_string()];
        }
        self.patterns
            .iter()
            .filter(|(_, re)| re.is_match(name))
            .map(|(p, _)| {
                if self.by_name {
                    name.to_string()
                } else {
                    p.clone()
                }
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// Position of a label among the patterns, for ordering rows.
    fn order(&self, label: &str) -> usize {
        self.patterns
            .iter()
            .position(|(p, re)| p == label || (self.by_name && re.is_match(label)))
            .unwrap_or(usize::MAX)
    }
}

/// `run_b$p.sqlite` (matched against the file name) or a regex with one group (searched in
/// the path).
pub struct ParamPattern {
    re: Regex,
    on_file_name: bool,
}

impl ParamPattern {
    pub fn new(p: &str) -> anyhow::Result<ParamPattern> {
        if p.contains("$p") {
            // a glob over the file name in which $p captures the value
            let parts: Vec<String> = p
                .split("$p")
                .map(|part| {
                    glob_regex(part)
                        .trim_start_matches('^')
                        .trim_end_matches('$')
                        .to_string()
                })
                .collect();
            let re = format!("^{}$", parts.join("(.+?)"));
            return Ok(ParamPattern {
                re: Regex::new(&re)?,
                on_file_name: true,
            });
        }
        let re = Regex::new(p).with_context(|| format!("bad --param pattern {p:?}"))?;
        if re.captures_len() != 2 {
            bail!("--param {p:?} must contain $p or exactly one capture group");
        }
        Ok(ParamPattern {
            re,
            on_file_name: false,
        })
    }

    pub fn value_of(&self, path: &str) -> Option<String> {
        let hay = if self.on_file_name {
            std::path::Path::new(path).file_name()?.to_str()?
        } else {
            path
        };
        Some(self.re.captures(hay)?.get(1)?.as_str().to_string())
    }
}

/// A row: what it counts (pattern or name) and the kind of slice.
pub type RowKey = (String, &'static str);

#[derive(Clone, Debug)]
pub struct RowData {
    pub all: Summary,
    /// For NVTX rows: GPU time of the work launched inside each range.
    pub gpu: Option<Summary>,
}

pub struct TraceReport {
    pub path: String,
    pub param: Option<String>,
    pub span: Option<i64>,
    pub open_slices: u64,
    pub rows: BTreeMap<RowKey, RowData>,
}

impl TraceReport {
    pub fn new(path: &str, param: Option<String>, stats: TraceStats, m: &Matcher) -> TraceReport {
        let mut buckets: BTreeMap<RowKey, Vec<i64>> = BTreeMap::new();
        for ((kind, name), durs) in &stats.slices {
            for label in m.labels(*kind, name) {
                buckets
                    .entry((label, kind.name()))
                    .or_default()
                    .extend(durs);
            }
        }
        let mut gpu: BTreeMap<RowKey, Vec<i64>> = BTreeMap::new();
        for (name, durs) in &stats.nvtx_gpu {
            for label in m.labels(SliceKind::Nvtx, name) {
                gpu.entry((label, SliceKind::Nvtx.name()))
                    .or_default()
                    .extend(durs);
            }
        }
        let rows = buckets
            .into_iter()
            .filter_map(|(k, mut v)| {
                let all = Summary::of(&mut v)?;
                let gpu = gpu.get_mut(&k).and_then(|g| Summary::of(g));
                Some((k, RowData { all, gpu }))
            })
            .collect();
        TraceReport {
            path: path.to_string(),
            param,
            span: stats.first_ts.zip(stats.last_ts).map(|(a, b)| b - a),
            open_slices: stats.open_slices,
            rows,
        }
    }
}

/// The rows to show: every pattern row found, in pattern order; without patterns the `top`
/// rows by total time over all traces.
pub fn choose_rows(reports: &[TraceReport], m: &Matcher, top: usize) -> Vec<RowKey> {
    let mut totals: BTreeMap<&RowKey, i64> = BTreeMap::new();
    for r in reports {
        for (k, d) in &r.rows {
            *totals.entry(k).or_default() += d.all.total;
        }
    }
    let mut keys: Vec<(&RowKey, i64)> = totals.into_iter().collect();
    if m.has_patterns() {
        keys.sort_by(|a, b| (m.order(&a.0 .0), a.0).cmp(&(m.order(&b.0 .0), b.0)));
        keys.into_iter().map(|(k, _)| k.clone()).collect()
    } else {
        keys.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        keys.into_iter().take(top).map(|(k, _)| k.clone()).collect()
    }
}

/// A cell of a parameter table: the mean over the traces with that value, its spread, and how
/// many traces there were.
#[derive(Clone, Copy, Debug)]
pub struct Cell {
    pub mean: f64,
    pub spread: f64,
    pub n: usize,
}

pub struct Pivot {
    pub values: Vec<String>,
    pub rows: Vec<RowKey>,
    /// `cells[row][value]`
    pub cells: Vec<Vec<Option<Cell>>>,
    /// Whether a row shows GPU time (NVTX rows with --gpu).
    pub gpu_rows: Vec<bool>,
}

/// Orders parameter values numerically when they are numbers, else as text.
fn value_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

impl Pivot {
    pub fn new(reports: &[TraceReport], rows: &[RowKey], stat: Stat, gpu: bool) -> Pivot {
        let mut values: Vec<String> = reports.iter().filter_map(|r| r.param.clone()).collect();
        values.sort_by(|a, b| value_order(a, b));
        values.dedup();
        let gpu_rows: Vec<bool> = rows
            .iter()
            .map(|(_, k)| gpu && *k == SliceKind::Nvtx.name())
            .collect();
        let cells = rows
            .iter()
            .zip(&gpu_rows)
            .map(|(row, &use_gpu)| {
                values
                    .iter()
                    .map(|v| {
                        let xs: Vec<f64> = reports
                            .iter()
                            .filter(|r| r.param.as_deref() == Some(v.as_str()))
                            .filter_map(|r| r.rows.get(row))
                            .filter_map(|d| {
                                if use_gpu {
                                    d.gpu.as_ref()
                                } else {
                                    Some(&d.all)
                                }
                            })
                            .map(|s| s.get(stat))
                            .collect();
                        (!xs.is_empty()).then(|| {
                            let (mean, spread) = mean_spread(&xs);
                            Cell {
                                mean,
                                spread,
                                n: xs.len(),
                            }
                        })
                    })
                    .collect()
            })
            .collect();
        Pivot {
            values,
            rows: rows.to_vec(),
            cells,
            gpu_rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_from_names() {
        let p = ParamPattern::new("run_b$p.sqlite").unwrap();
        assert_eq!(p.value_of("dir/run_b64.sqlite").as_deref(), Some("64"));
        assert_eq!(p.value_of("dir/other.sqlite"), None);
        let p = ParamPattern::new("run_b$p_r*.json").unwrap();
        assert_eq!(p.value_of("run_b16_r2.json").as_deref(), Some("16"));
        let p = ParamPattern::new(r"gpus(\d+)/").unwrap();
        assert_eq!(p.value_of("x/gpus8/rep1.json").as_deref(), Some("8"));
        assert!(ParamPattern::new(r"(a)(b)").is_err());
        let mut v = vec!["16", "2", "abc", "8.5"];
        v.sort_by(|a, b| value_order(a, b));
        assert_eq!(v, ["2", "8.5", "16", "abc"]);
    }

    #[test]
    fn patterns_and_kinds() {
        let m = Matcher::new(
            &["^cuda.*Memcpy".into(), "Kernel".into()],
            false,
            false,
            &[],
        )
        .unwrap();
        assert_eq!(
            m.labels(SliceKind::CudaApi, "cudaMemcpyAsync"),
            vec!["^cuda.*Memcpy"]
        );
        assert!(m.labels(SliceKind::Kernel, "gemm").is_empty());
        let g = Matcher::new(&["cuda*".into()], true, true, &["cuda-api".into()]).unwrap();
        assert_eq!(g.labels(SliceKind::CudaApi, "cudaFree"), vec!["cudaFree"]);
        assert!(g.labels(SliceKind::Kernel, "cudaFree").is_empty());
        assert!(g.labels(SliceKind::CudaApi, "xcudaFree").is_empty());
        assert!(Matcher::new(&[], false, false, &["bogus".into()]).is_err());
    }
}
