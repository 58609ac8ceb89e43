//! Perfetto's trace processor as a test oracle: `../shared/tools/perfetto/query.sh` loads a file
//! into `trace_processor_shell` (the engine of ui.perfetto.dev) and prints its counts and the
//! `stats` of what it could not import. Kept in a module of its own so that every test that
//! asks Perfetto goes through one helper.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What Perfetto built from one file.
#[derive(Debug, Default, Clone)]
pub struct Loaded {
    /// `slices`, `thread_slices`, `flows`, `counter_values`, `counter_tracks`, `instants`,
    /// `processes`, `threads`, `tracks`.
    pub counts: BTreeMap<String, i64>,
    /// Non-zero stats rows: (severity, name, value).
    pub stats: Vec<(String, String, i64)>,
    /// The trace did not load at all (query.sh exit 2), with its output.
    pub failed: Option<String>,
}

impl Loaded {
    /// Stats rows of severity `error` or `data_loss`: something Perfetto lost.
    pub fn loss_stats(&self) -> impl Iterator<Item = &(String, String, i64)> {
        self.stats
            .iter()
            .filter(|(sev, _, _)| sev == "error" || sev == "data_loss")
    }

    /// The same, one line each.
    pub fn losses(&self) -> Vec<String> {
        self.loss_stats()
            .map(|(sev, name, v)| format!("{name}={v} ({sev})"))
            .collect()
    }

    /// How much Perfetto lost under one stat name.
    pub fn lost(&self, stat: &str) -> i64 {
        self.loss_stats()
            .filter(|(_, name, _)| name == stat)
            .map(|(_, _, v)| *v)
            .sum()
    }

    pub fn count(&self, key: &str) -> i64 {
        self.counts.get(key).copied().unwrap_or(0)
    }
}

/// `query.sh` and the binary it runs, or why they are not there.
pub fn find() -> Result<PathBuf, String> {
    let script = crate::common::corpus()
        .map(|c| c.join("../tools/perfetto/query.sh"))
        .filter(|s| s.is_file())
        .ok_or("../shared/tools/perfetto/query.sh is not there")?;
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let present = [
        std::env::var_os("TRACE_PROCESSOR_SHELL").map(PathBuf::from),
        crate::common::tool("trace_processor_shell"),
        Some(home.join(".cache/tracex-tools/trace_processor_shell")),
    ]
    .into_iter()
    .flatten()
    .any(|p| p.is_file());
    if !present {
        return Err(
            "Perfetto's trace_processor_shell is not built on this machine (see \
                    ../shared/tools/perfetto/README.md; it is third-party and never installed \
                    by setup)"
                .into(),
        );
    }
    Ok(script)
}

/// Loads `file` with `query.sh`.
pub fn load(script: &Path, file: &Path) -> Loaded {
    let out = Command::new("bash")
        .arg(script)
        .arg(file)
        .output()
        .expect("run query.sh");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    parse(&text, out.status.code())
}

fn unquote(s: &str) -> &str {
    s.trim().trim_matches('"')
}

/// Reads query.sh's output: a `what,n` table of counts, then `severity,name,idx,value` rows.
pub fn parse(text: &str, code: Option<i32>) -> Loaded {
    let mut l = Loaded::default();
    if code == Some(2) {
        l.failed = Some(text.lines().take(5).collect::<Vec<_>>().join(" | "));
        return l;
    }
    for line in text.lines() {
        let f: Vec<&str> = line.split(',').collect();
        match f.len() {
            2 => {
                if let Ok(n) = unquote(f[1]).parse::<i64>() {
                    l.counts.insert(unquote(f[0]).to_string(), n);
                }
            }
            4 => {
                if let Ok(n) = unquote(f[3]).parse::<i64>() {
                    l.stats
                        .push((unquote(f[0]).to_string(), unquote(f[1]).to_string(), n));
                }
            }
            _ => {}
        }
    }
    l
}

#[test]
fn parses_query_output() {
    let text = "\"what\",\"n\"\n\"slices\",12\n\"flows\",3\n\n\"severity\",\"name\",\"idx\",\"value\"\n\"data_loss\",\"trace_sorter_negative_timestamp_dropped\",\"[NULL]\",2\n\"info\",\"json_display_time_unit\",\"[NULL]\",1\n";
    let l = parse(text, Some(1));
    assert_eq!(l.count("slices"), 12);
    assert_eq!(l.count("flows"), 3);
    assert_eq!(
        l.losses(),
        vec!["trace_sorter_negative_timestamp_dropped=2 (data_loss)".to_string()]
    );
}
