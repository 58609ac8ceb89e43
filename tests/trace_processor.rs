//! Perfetto's trace processor as a test oracle: `../shared/tools/perfetto/query.sh` loads a file
//! into `trace_processor_shell` (the engine of ui.perfetto.dev) and prints its counts and the
//! `stats` of what it could not import; [`view`] asks `trace_processor_shell` directly for the
//! counts, stats and track tree the Perfetto tests compare. Kept in a module of its own so that
//! every test that asks Perfetto goes through it.

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
    /// Flows by the names of the slices at their two ends (`out -> in`): where a viewer draws
    /// the arrows, which equal counts alone do not show.
    pub flow_ends: BTreeMap<String, i64>,
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

/// Perfetto's `trace_processor_shell`, when built on this machine
/// (../shared/tools/perfetto/README.md; it is third-party and never installed by setup).
pub fn shell() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    [
        std::env::var_os("TRACE_PROCESSOR_SHELL").map(PathBuf::from),
        crate::common::tool("trace_processor_shell"),
        Some(home.join(".cache/tracex-tools/trace_processor_shell")),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.is_file())
}

/// `query.sh` (whose binary is [`shell`]), or why it is not there.
pub fn find() -> Result<PathBuf, String> {
    let script = crate::common::corpus()
        .map(|c| c.join("../tools/perfetto/query.sh"))
        .filter(|s| s.is_file())
        .ok_or("../shared/tools/perfetto/query.sh is not there")?;
    if shell().is_none() {
        return Err(
            "Perfetto's trace_processor_shell is not built on this machine (see \
                    ../shared/tools/perfetto/README.md; it is third-party and never installed \
                    by setup)"
                .into(),
        );
    }
    Ok(script)
}

/// Flows counted by the names of their end slices, one `"flow_end",n,"out -> in"` row each.
/// (Line breaks in names become spaces: a row is one line.)
const FLOW_ENDS_SQL: &str = "select 'flow_end', count(*), \
    replace(ifnull(o.name, '?') || ' -> ' || ifnull(i.name, '?'), char(10), ' ') \
    from flow f join slice o on f.slice_out = o.id join slice i on f.slice_in = i.id \
    group by 3 order by 3";

/// Loads `file` with `query.sh`, then asks for its flows' ends.
pub fn load(script: &Path, file: &Path) -> Loaded {
    let out = Command::new("bash")
        .arg(script)
        .arg(file)
        .output()
        .expect("run query.sh");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut loaded = parse(&text, out.status.code());
    if loaded.failed.is_none() {
        loaded.flow_ends = flow_ends(file);
    }
    loaded
}

/// [`FLOW_ENDS_SQL`] on `file`, from trace processor's standard output alone: query.sh mixes
/// the shell's log lines into its rows, which can cut a row of long names.
fn flow_ends(file: &Path) -> BTreeMap<String, i64> {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("q.sql");
    std::fs::write(&q, FLOW_ENDS_SQL).unwrap();
    let shell = shell().expect("query.sh found trace_processor_shell");
    let out = Command::new(shell)
        .arg("--query-file")
        .arg(&q)
        .arg(file)
        .output()
        .expect("run trace_processor_shell");
    parse(&String::from_utf8_lossy(&out.stdout), out.status.code()).flow_ends
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
        // a flow-end row holds names, which may hold commas: they come last, in one cell
        if let Some(row) = line.strip_prefix("\"flow_end\",") {
            if let Some((n, ends)) = row.split_once(',') {
                if let Ok(n) = n.parse::<i64>() {
                    l.flow_ends.insert(unquote(ends).to_string(), n);
                }
            }
            continue;
        }
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

/// trace processor's counts for a trace: `(slices, flows, counter values, instants,
/// processes, threads)` plus the stats of severity error or data loss, and the track tree.
#[derive(Debug)]
pub struct View {
    pub counts: BTreeMap<String, u64>,
    pub bad_stats: Vec<String>,
    pub tree: Vec<String>,
}

/// The summary trace processor is asked for; each row names what it holds.
const TP_SQL: &str = "select 'slices' as what, count(*) as n from slice where dur != 0
union all select 'instants', count(*) from slice where dur = 0
union all select 'flows', count(*) from flow
union all select 'counter_values', count(*) from counter c join counter_track t on c.track_id = t.id where t.name not in ('thread_time') and t.type not like '%stack_sample%'
union all select 'counter_tracks', count(*) from counter_track
union all select 'tracks', count(*) from track
union all select 'processes', count(*) from process where pid != 0
union all select 'threads', count(*) from thread where tid != 0;
select 'stat', severity, name, value from stats where value > 0 and severity in ('error', 'data_loss');
select 'tree', p.name || ' > ' || t.name from track t join track p on t.parent_id = p.id where p.parent_id is null and p.name is not null order by 2;
";

/// What trace processor built from a file, or why it could not load it.
pub fn try_view(tp: &Path, trace: &Path) -> std::result::Result<View, String> {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("q.sql");
    std::fs::write(&q, TP_SQL).unwrap();
    let out = Command::new(tp)
        .arg("--query-file")
        .arg(&q)
        .arg(trace)
        .output()
        .expect("run trace_processor_shell");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!("{text}{}", String::from_utf8_lossy(&out.stderr)));
    }
    let mut v = View {
        counts: BTreeMap::new(),
        bad_stats: Vec::new(),
        tree: Vec::new(),
    };
    for line in text.lines() {
        // a tree row holds names, which may hold commas: one cell after the tag
        if let Some(path) = line.strip_prefix("\"tree\",") {
            v.tree.push(path.trim_matches('"').to_string());
            continue;
        }
        let cells: Vec<String> = line
            .split(',')
            .map(|c| c.trim_matches('"').to_string())
            .collect();
        match cells.first().map(String::as_str) {
            Some("stat") => v.bad_stats.push(cells[1..].join(" ")),
            Some(k) if cells.len() == 2 => {
                if let Ok(n) = cells[1].parse() {
                    v.counts.insert(k.to_string(), n);
                }
            }
            _ => {}
        }
    }
    Ok(v)
}

/// [`try_view`], which must succeed.
pub fn view(tp: &Path, trace: &Path) -> View {
    try_view(tp, trace)
        .unwrap_or_else(|e| panic!("trace processor could not load {}: {e}", trace.display()))
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

#[test]
fn parses_flow_end_rows_with_commas_in_names() {
    let text = "\"'flow_end'\",\"count(*)\",\"e\"\n\"flow_end\",3,\"launch -> kernel<4, float>(int, float)\"\n\"flow_end\",1,\"a -> b\"\n";
    let l = parse(text, Some(0));
    assert_eq!(
        l.flow_ends.get("launch -> kernel<4, float>(int, float)"),
        Some(&3)
    );
    assert_eq!(l.flow_ends.get("a -> b"), Some(&1));
    assert_eq!(l.flow_ends.len(), 2);
    assert!(l.counts.is_empty(), "{:?}", l.counts);
}
