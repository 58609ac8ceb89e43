//! `tracex stats`: numbers compared with values computed independently in the test (plain sums
//! over the parsed JSON; SQL over nsys exports in tests/nsys.rs).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::common::*;

/// `12.345` µs (a JSON number's text) → ns, exactly.
fn ns(raw: &str) -> i64 {
    let (int, frac) = raw.split_once('.').unwrap_or((raw, ""));
    let frac = format!("{frac:0<3}");
    assert!(
        frac.len() == 3 || frac[3..].chars().all(|c| c == '0'),
        "unexpected precision {raw}"
    );
    int.parse::<i64>().unwrap() * 1000 + frac[..3].parse::<i64>().unwrap()
}

#[derive(Deserialize)]
struct Ev<'a> {
    ph: Option<String>,
    name: Option<String>,
    #[serde(borrow)]
    dur: Option<&'a RawValue>,
}

/// Durations (ns) of the `X` events of a Chrome file, by name.
fn x_durations(path: &Path) -> BTreeMap<String, Vec<i64>> {
    let bytes = std::fs::read(path).unwrap();
    let text = if path.extension().is_some_and(|e| e == "gz") {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut flate2::read::MultiGzDecoder::new(&bytes[..]), &mut s)
            .unwrap();
        s
    } else {
        String::from_utf8(bytes).unwrap()
    };
    #[derive(Deserialize)]
    struct Doc<'a> {
        #[serde(borrow, rename = "traceEvents")]
        events: Vec<Ev<'a>>,
    }
    let doc: Doc = serde_json::from_str(&text).unwrap();
    let mut m: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for e in doc.events {
        if e.ph.as_deref() == Some("X") {
            m.entry(e.name.unwrap_or_default())
                .or_default()
                .push(ns(e.dur.unwrap().get()));
        }
    }
    m
}

fn stats_json(args: &[&str]) -> serde_json::Value {
    let mut a = vec!["stats", "--format", "json"];
    a.extend_from_slice(args);
    serde_json::from_slice(&run_ok(&a).stdout).unwrap()
}

/// count, total, min, median (nearest rank), p95, max of durations.
fn expected(mut v: Vec<i64>) -> (u64, i64, i64, i64, i64, i64) {
    v.sort();
    let n = v.len();
    let rank = |p: f64| v[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
    (
        n as u64,
        v.iter().sum(),
        v[0],
        rank(0.5),
        rank(0.95),
        v[n - 1],
    )
}

fn check_row(row: &serde_json::Value, durs: Vec<i64>) {
    let (count, total, min, median, p95, max) = expected(durs);
    let s = &row["stats"];
    assert_eq!(s["count"], count, "{row}");
    assert_eq!(s["total_ns"], total, "{row}");
    assert_eq!(s["min_ns"], min, "{row}");
    assert_eq!(s["median_ns"], median, "{row}");
    assert_eq!(s["p95_ns"], p95, "{row}");
    assert_eq!(s["max_ns"], max, "{row}");
}

#[test]
fn chrome_numbers_match_plain_sums() {
    let mut files: Vec<_> = corpus_files("chrome")
        .into_iter()
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.contains("HolisticTraceAnalysis-rank-0")
                || n.contains("kineto-worker")
                || n.contains("mtia")
        })
        .collect();
    files.push(root().join("fixtures/demo/gpu_training_step.json"));
    for f in &files {
        let expected_by_name = x_durations(f);
        // the three names with the most X events, matched exactly
        let mut names: Vec<_> = expected_by_name.iter().collect();
        names.sort_by_key(|(n, v)| (std::cmp::Reverse(v.len()), (*n).clone()));
        for (name, durs) in names.into_iter().take(3) {
            let pat = format!("^{}$", regex_escape(name));
            let v = stats_json(&[f.to_str().unwrap(), "--events", &pat]);
            let rows = v[0]["rows"].as_array().unwrap();
            // one name can be several kinds only if its categories differ; these do not
            assert_eq!(rows.len(), 1, "{name}: {v}");
            check_row(&rows[0], durs.clone());
        }
    }
    eprintln!("stats vs plain sums: {} Chrome traces checked", files.len());
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if "\\.+*?()|[]{}^$#&-~".contains(c) {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A series of traces whose numbers are known by construction.
fn write_series(dir: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    for b in [8i64, 16, 32] {
        for rep in [1i64, 2] {
            let mut ev = Vec::new();
            let mut t = 0i64;
            for i in 0..10i64 {
                let d = b * 10 + rep * 3 + i % 3;
                ev.push(serde_json::json!({"ph":"X","name":"forward","cat":"user_annotation","pid":1,"tid":1,"ts":t,"dur":d*2}));
                ev.push(serde_json::json!({"ph":"X","name":"cudaLaunchKernel","cat":"cuda_runtime","pid":1,"tid":1,"ts":t+1,"dur":5}));
                ev.push(serde_json::json!({"ph":"X","name":"gemm","cat":"kernel","pid":0,"tid":7,"ts":t+10,"dur":d}));
                ev.push(serde_json::json!({"ph":"s","id":i+1,"cat":"ac2g","name":"ac2g","pid":1,"tid":1,"ts":t+1}));
                ev.push(serde_json::json!({"ph":"f","id":i+1,"cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":t+10,"bp":"e"}));
                t += d * 3;
            }
            let p = dir.join(format!("run_b{b}_r{rep}.json"));
            std::fs::write(&p, serde_json::json!({ "traceEvents": ev }).to_string()).unwrap();
            paths.push(p.to_string_lossy().into_owned());
        }
    }
    paths
}

#[test]
fn parameter_series_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let paths = write_series(dir.path());
    let svg = dir.path().join("plot.svg");
    let mut args: Vec<&str> = vec![
        "stats",
        "--format",
        "json",
        "--param",
        "run_b$p_r*.json",
        "--events",
        "forward",
        "gemm",
        "--gpu",
        "--stat",
        "mean",
        "--plot",
        svg.to_str().unwrap(),
    ];
    args.extend(paths.iter().map(|s| s.as_str()));
    let v: serde_json::Value = serde_json::from_slice(&run_ok(&args).stdout).unwrap();
    assert_eq!(v["params"], serde_json::json!(["8", "16", "32"]));
    for row in v["rows"].as_array().unwrap() {
        for cell in row["cells"].as_array().unwrap() {
            let b: i64 = cell["param"].as_str().unwrap().parse().unwrap();
            // per trace: mean over i of (b*10 + rep*3 + i%3) µs; i%3 over 0..10 sums to 9
            let per_rep = |rep: i64| (b * 10 + rep * 3) as f64 * 1000.0 + 900.0;
            let (m1, m2) = (per_rep(1), per_rep(2));
            let want = (m1 + m2) / 2.0;
            // forward's own duration is twice the kernel's; its GPU time (with --gpu) is the kernel's
            assert!(
                (cell["mean"].as_f64().unwrap() - want).abs() < 1e-6,
                "{row}"
            );
            assert!(
                (cell["spread"].as_f64().unwrap() - (m2 - m1).abs() / 2.0).abs() < 1e-6,
                "{row}"
            );
            assert_eq!(cell["traces"], 2);
        }
        assert_eq!(row["gpu_time"], row["name"] == "forward");
    }
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    assert_eq!(text.matches("<polyline").count(), 2);
    assert!(text.contains("forward [nvtx GPU]") && text.contains("gemm [kernel]"));

    // the text table is sorted numerically by parameter and shows the spread
    let mut args: Vec<&str> = vec![
        "stats",
        "--param",
        r"run_b(\d+)_",
        "--events",
        "gemm",
        "--unit",
        "us",
    ];
    args.extend(paths.iter().map(|s| s.as_str()));
    let text = String::from_utf8(run_ok(&args).stdout).unwrap();
    let header = text.lines().nth(1).unwrap();
    assert!(
        header.find("p=8").unwrap() < header.find("p=16").unwrap()
            && header.find("p=16").unwrap() < header.find("p=32").unwrap(),
        "{text}"
    );
    assert!(text.contains("85.400 ±1.500"), "{text}");
}

#[test]
fn bad_stats_arguments() {
    let demo = root().join("fixtures/demo/gpu_training_step.json");
    let d = demo.to_str().unwrap();
    assert!(run_err(&["stats", d, "--plot", "x.svg"]).contains("--param"));
    assert!(run_err(&["stats", d, "--param", "nope$p.json"]).contains("does not match"));
    assert!(run_err(&["stats", d, "--kind", "bogus"]).contains("unknown kind"));
    assert!(run_err(&["stats", d, "--events", "("]).contains("bad event pattern"));
    let err = run_err(&[
        "stats",
        d,
        root()
            .join("fixtures/chrome/bad_not_json.txt")
            .to_str()
            .unwrap(),
    ]);
    assert!(err.contains("1 of 2 traces could not be read"), "{err}");
}

/// (count, total, min, max) by name from SQL rows of (name, duration).
fn sql_groups(db: &rusqlite::Connection, sql: &str) -> BTreeMap<String, Vec<i64>> {
    let mut m: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    let mut st = db.prepare(sql).unwrap();
    let rows = st
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .unwrap();
    for row in rows {
        let (name, dur) = row.unwrap();
        m.entry(name).or_default().push(dur);
    }
    m
}

/// `cudaLaunchKernel_v7000` → `cudaLaunchKernel`, as nsys's own reports show API names.
fn strip_version(name: &str) -> String {
    match name.rfind("_v") {
        Some(i) if name[i + 2..].chars().all(|c| c.is_ascii_digit()) && i + 2 < name.len() => {
            name[..i].to_string()
        }
        _ => name.to_string(),
    }
}

#[test]
fn nsys_numbers_match_sql() {
    let mut checked = 0;
    for f in corpus_files("nsys") {
        let db = rusqlite::Connection::open_with_flags(
            format!("file:{}?mode=ro&immutable=1", f.display()),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
        )
        .unwrap();
        let has = |t: &str| {
            db.query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = ?1",
                [t],
                |r| r.get::<_, i64>(0),
            )
            .unwrap()
                > 0
        };
        let mut expected: Vec<(&str, BTreeMap<String, Vec<i64>>)> = Vec::new();
        if has("CUPTI_ACTIVITY_KIND_KERNEL") {
            expected.push((
                "kernel",
                sql_groups(&db, "SELECT s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName"),
            ));
        }
        if has("CUPTI_ACTIVITY_KIND_RUNTIME") {
            // eventClass 67 rows are nsys's backtrace duplicates of the calls
            let raw = sql_groups(&db, "SELECT s.value, r.end - r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE r.eventClass IS NOT 67");
            let mut m: BTreeMap<String, Vec<i64>> = BTreeMap::new();
            for (name, v) in raw {
                m.entry(strip_version(&name)).or_default().extend(v);
            }
            expected.push(("cuda-api", m));
        }
        if expected.is_empty() {
            continue;
        }
        for (kind, groups) in expected {
            // the two names with the most rows of this kind
            let mut names: Vec<_> = groups.iter().collect();
            names.sort_by_key(|(n, v)| (std::cmp::Reverse(v.len()), (*n).clone()));
            for (name, durs) in names.into_iter().take(2) {
                let pat = format!("^{}$", regex_escape(name));
                let v = stats_json(&[f.to_str().unwrap(), "--events", &pat, "--kind", kind]);
                let rows = v[0]["rows"].as_array().unwrap();
                assert_eq!(rows.len(), 1, "{} {kind} {name}: {v}", f.display());
                check_row(&rows[0], durs.clone());
            }
        }
        checked += 1;
    }
    eprintln!("stats vs SQL: {checked} real nsys exports checked");
    if corpus().is_some() {
        assert!(
            checked >= 9,
            "expected the 9 nsys exports with CUDA tables, checked {checked}"
        );
    }
}

/// CSV output reads back with a CSV reader, whatever the names hold: a comma, a quote, LF or
/// CR (which the hand-written quoting left bare, so that a reader split the record there).
#[test]
fn csv_output_reads_back_whatever_the_names_hold() {
    let names = [
        "plain",
        "a,b",
        "say \"hi\"",
        "line\nbreak",
        "carriage\rreturn",
    ];
    let events: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            format!(
                r#"{{"ph":"X","name":{},"pid":1,"tid":1,"ts":{},"dur":5}}"#,
                serde_json::to_string(n).unwrap(),
                i * 10
            )
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd, \"names\".json");
    std::fs::write(&path, format!("[{}]", events.join(","))).unwrap();
    let out = run_ok(&["stats", "--format", "csv", path.to_str().unwrap()]).stdout;
    let mut r = csv::Reader::from_reader(&out[..]);
    let header = r.headers().unwrap().clone();
    assert_eq!(&header[2], "name");
    let mut got: Vec<String> = Vec::new();
    for rec in r.records() {
        let rec = rec.unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(&out)));
        assert_eq!(rec.len(), header.len());
        assert_eq!(&rec[0], path.to_str().unwrap());
        assert_eq!(&rec[3], "1", "{rec:?}");
        got.push(rec[2].to_string());
    }
    got.sort();
    let mut want: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    want.sort();
    assert_eq!(got, want);
}
