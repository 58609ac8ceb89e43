//! Summary statistics of a list of durations.

use serde::Serialize;

/// Count, total and order statistics of durations in ns. Percentiles are nearest-rank.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub count: u64,
    pub total: i64,
    pub mean: f64,
    pub min: i64,
    pub median: i64,
    pub p95: i64,
    pub max: i64,
}

impl Summary {
    /// `None` for an empty list. Sorts `v`.
    pub fn of(v: &mut [i64]) -> Option<Summary> {
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        let n = v.len();
        let total: i64 = v.iter().sum();
        let rank = |p: f64| v[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        Some(Summary {
            count: n as u64,
            total,
            mean: total as f64 / n as f64,
            min: v[0],
            median: rank(0.5),
            p95: rank(0.95),
            max: v[n - 1],
        })
    }

    /// The named statistic as a number (ns, or a count).
    pub fn get(&self, stat: Stat) -> f64 {
        match stat {
            Stat::Count => self.count as f64,
            Stat::Total => self.total as f64,
            Stat::Mean => self.mean,
            Stat::Min => self.min as f64,
            Stat::Median => self.median as f64,
            Stat::P95 => self.p95 as f64,
            Stat::Max => self.max as f64,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Stat {
    Count,
    Total,
    Mean,
    Min,
    Median,
    P95,
    Max,
}

impl Stat {
    pub fn name(self) -> &'static str {
        match self {
            Stat::Count => "count",
            Stat::Total => "total",
            Stat::Mean => "mean",
            Stat::Min => "min",
            Stat::Median => "median",
            Stat::P95 => "p95",
            Stat::Max => "max",
        }
    }

    pub fn is_time(self) -> bool {
        self != Stat::Count
    }
}

/// Mean and (population) standard deviation of values.
pub fn mean_spread(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let mut v: Vec<i64> = (1..=20).rev().collect();
        let s = Summary::of(&mut v).unwrap();
        assert_eq!((s.count, s.total, s.min, s.max), (20, 210, 1, 20));
        assert_eq!((s.median, s.p95), (10, 19));
        assert_eq!(s.mean, 10.5);
        let s = Summary::of(&mut [7]).unwrap();
        assert_eq!((s.median, s.p95), (7, 7));
        assert!(Summary::of(&mut []).is_none());
        assert_eq!(mean_spread(&[1.0, 3.0]), (2.0, 1.0));
    }
}
