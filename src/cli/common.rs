//! Options of every command that reads traces: memory, strictness and the filters.

use clap::Args;

/// Options shared by every command that reads traces.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Fail (exit 1, no output) when the input has errors that were worked around
    #[arg(long)]
    pub strict: bool,

    /// Memory for reordering events before spilling to temporary files (e.g. 512M, 2G)
    #[arg(long, value_name = "SIZE", default_value = "256M")]
    pub mem_budget: String,

    /// Keep only this time window, A:B with units ns, us, ms or s (either side may be empty:
    /// `2s:`), relative to the trace's first event; slices crossing an edge are clipped and marked
    #[arg(long, value_name = "A:B", help_heading = "Filters")]
    pub time_range: Option<String>,

    /// Read --time-range in the trace's own clock (its timestamps) instead of from its start
    #[arg(long, help_heading = "Filters")]
    pub absolute: bool,

    /// Keep only these processes (pid, or a string id); GPU devices are always kept
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "PID",
        help_heading = "Filters"
    )]
    pub pid: Vec<String>,

    /// Keep only events whose name matches one of these regular expressions
    #[arg(long, value_name = "REGEX", help_heading = "Filters")]
    pub include: Vec<String>,

    /// Drop events whose name matches one of these regular expressions
    #[arg(long, value_name = "REGEX", help_heading = "Filters")]
    pub exclude: Vec<String>,

    /// Keep only these kinds: cuda-api, kernel, memcpy, memset, sync, nvtx, osrt, mpi, library,
    /// other, samples, counters, instants, flows
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "KINDS",
        help_heading = "Filters"
    )]
    pub activity: Vec<String>,
}

impl CommonArgs {
    /// The filters these options ask for.
    pub fn filter(&self) -> anyhow::Result<crate::filter::FilterSpec> {
        let mut f = crate::filter::FilterSpec::default();
        if let Some(r) = &self.time_range {
            f.set_time_range(r, self.absolute)?;
        } else if self.absolute {
            anyhow::bail!("--absolute applies to --time-range, which is missing");
        }
        f.pids = self.pid.clone();
        let re = |v: &[String], what: &str| -> anyhow::Result<Vec<regex::Regex>> {
            v.iter()
                .map(|p| regex::Regex::new(p).map_err(|e| anyhow::anyhow!("--{what} {p:?}: {e}")))
                .collect()
        };
        f.include = re(&self.include, "include")?;
        f.exclude = re(&self.exclude, "exclude")?;
        f.set_activity(&self.activity, &crate::formats::activity_words())?;
        Ok(f)
    }
}
