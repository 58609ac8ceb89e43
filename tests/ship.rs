//! tracex as an installed tool: --version, completions and man pages, colours and one error
//! style, the --json summary, Nsight Systems reports through nsys, SVG flame graphs,
//! --split-by, --shard, and the release archive running where libotf2 is not installed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::*;

/// Panics with its stderr unless a program exited 0.
fn succeeded(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn fixture(rel: &str) -> String {
    root()
        .join("fixtures")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn demo() -> String {
    fixture("demo/gpu_training_step.json")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn version_names_commit_features_and_libotf2() {
    let text = String::from_utf8(run_ok(&["--version"]).stdout).unwrap();
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("tracex {} (rev ", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    let rev = first.split("(rev ").nth(1).unwrap().trim_end_matches(')');
    assert!(
        rev == "unknown" || rev.chars().all(|c| c.is_ascii_hexdigit()),
        "{rev}"
    );
    assert!(text.contains("features: +otf2") || text.contains("features: -otf2"));
    for f in ["chrome", "folded", "svg", "nsys", "cupti"] {
        assert!(text.contains(f), "formats line lacks {f}: {text}");
    }
    if text.contains("+otf2") {
        assert!(
            text.contains("libotf2 3.") || text.contains("libotf2 2."),
            "{text}"
        );
    }
}

/// Every subcommand, from `--help`.
fn subcommands() -> Vec<String> {
    let help = String::from_utf8(run_ok(&["--help"]).stdout).unwrap();
    let cmds: Vec<String> = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // a wrapped description is indented further
        .filter(|l| !l.starts_with("   "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|c| c != "help")
        .collect();
    for c in [
        "convert",
        "info",
        "dump",
        "stats",
        "formats",
        "completions",
        "man",
    ] {
        assert!(cmds.iter().any(|x| x == c), "{c} not in {cmds:?}");
    }
    cmds
}

#[test]
fn completions_and_man_pages_cover_every_subcommand() {
    let cmds = subcommands();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let text = String::from_utf8(run_ok(&["completions", shell]).stdout).unwrap();
        assert!(text.len() > 1000, "{shell}: {} bytes", text.len());
        for c in &cmds {
            assert!(text.contains(c.as_str()), "{shell} completion lacks {c}");
        }
        // options of convert are completed too
        assert!(
            text.contains("split-by") && text.contains("color"),
            "{shell}"
        );
    }
    if tool("bash").is_some() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("tracex.bash");
        std::fs::write(&script, run_ok(&["completions", "bash"]).stdout).unwrap();
        let out = Command::new("bash")
            .arg("-c")
            // bash completes `tracex conv` to convert and `tracex convert --spl` to --split-by
            .arg(format!(
                ". {} && complete -p tracex >/dev/null \
                 && COMP_WORDS=(tracex conv) COMP_CWORD=1 && _tracex tracex conv tracex \
                 && echo \"${{COMPREPLY[@]}}\" \
                 && COMP_WORDS=(tracex convert --spl) COMP_CWORD=2 && _tracex tracex --spl convert \
                 && echo \"${{COMPREPLY[@]}}\"",
                script.display()
            ))
            .output()
            .unwrap();
        succeeded(&out);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "convert\n--split-by\n"
        );
    }
    let page = String::from_utf8(run_ok(&["man"]).stdout).unwrap();
    assert!(page.contains(".TH tracex 1"), "{page}");
    for c in &cmds {
        assert!(page.contains(c.as_str()), "man page lacks {c}");
    }
    let dir = tempfile::tempdir().unwrap();
    run_ok(&["man", "--dir", s(dir.path())]);
    for c in std::iter::once("tracex".to_string()).chain(cmds.iter().map(|c| format!("tracex-{c}")))
    {
        let p = dir.path().join(format!("{c}.1"));
        let text =
            std::fs::read_to_string(&p).unwrap_or_else(|_| panic!("{} missing", p.display()));
        assert!(text.contains(".SH NAME"), "{}", p.display());
    }
    if tool("man").is_some() {
        let out = Command::new("man")
            .args(["-l", s(&dir.path().join("tracex-convert.1"))])
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("--split-by"), "man renders: {text}");
    }
}

const RED_ERROR: &str = "\x1b[1m\x1b[31merror:\x1b[0m ";

fn stderr_of(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut c = tracex_loud();
    c.args(args)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(if args.contains(&"--bogus") { 2 } else { 1 })
    );
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn colour_follows_color_and_no_color_with_one_error_style() {
    // tracex's own error and clap's usage error start alike, coloured alike
    let ours = ["info", "no-such-file.json"];
    let clap = ["info", "--bogus"];
    for args in [&ours[..], &clap[..]] {
        let always: Vec<&str> = [&["--color", "always"], args].concat();
        let never: Vec<&str> = [&["--color=never"], args].concat();
        assert!(stderr_of(&always, &[]).starts_with(RED_ERROR), "{args:?}");
        // --color always wins over NO_COLOR, as with clap and ripgrep
        assert!(stderr_of(&always, &[("NO_COLOR", "1")]).starts_with(RED_ERROR));
        let plain = stderr_of(&never, &[("CLICOLOR_FORCE", "1")]);
        assert!(
            plain.starts_with("error: ") && !plain.contains('\x1b'),
            "{plain}"
        );
        // auto: a pipe is not coloured; NO_COLOR beats CLICOLOR_FORCE
        let piped = stderr_of(args, &[]);
        assert!(
            piped.starts_with("error: ") && !piped.contains('\x1b'),
            "{piped}"
        );
        assert!(stderr_of(args, &[("CLICOLOR_FORCE", "1")]).starts_with(RED_ERROR));
        let no = stderr_of(args, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
        assert!(!no.contains('\x1b'), "{no}");
    }
}

/// The events of a Chrome JSON file tracex wrote, by phase.
fn phases(path: &Path) -> BTreeMap<String, u64> {
    let v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let events = v
        .get("traceEvents")
        .and_then(Value::as_array)
        .or_else(|| v.as_array())
        .unwrap()
        .clone();
    let mut n = BTreeMap::new();
    for e in events {
        *n.entry(e["ph"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    }
    n
}

#[test]
fn json_summary_describes_the_conversion() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.json");
    let o = run_ok(&["convert", &demo(), s(&out), "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    assert_eq!(v["tracex"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["failures"].as_array().unwrap().len(), 0);
    let c = &v["conversions"][0];
    assert_eq!(c["inputs"][0]["format"], "chrome");
    assert_eq!(
        c["inputs"][0]["bytes"].as_u64().unwrap(),
        std::fs::metadata(demo()).unwrap().len()
    );
    assert_eq!(c["output"]["format"], "chrome");
    assert_eq!(c["output"]["files"][0], s(&out));
    assert_eq!(
        c["output"]["bytes"].as_u64().unwrap(),
        std::fs::metadata(&out).unwrap().len()
    );
    // the counts are those of the file written: complete slices are X events
    let ph = phases(&out);
    // complete slices are X events, async ones b/e pairs
    assert_eq!(c["events"]["slices"].as_u64().unwrap(), ph["X"] + ph["b"]);
    let total: u64 = ["slices", "instants", "counters", "flows", "samples"]
        .iter()
        .filter_map(|k| c["events"][k].as_u64())
        .sum();
    assert_eq!(c["events"]["total"].as_u64().unwrap(), total);
    assert!(c["seconds"].as_f64().unwrap() >= 0.0);

    // diagnostics carry their location
    let bad = fixture("chrome/missing_end.json");
    let out2 = dir.path().join("m.json");
    let o = run_ok(&["convert", &bad, s(&out2), "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let diags = v["conversions"][0]["diagnostics"].as_array().unwrap();
    assert!(!diags.is_empty());
    for d in diags {
        assert!(
            d["name"].is_string() && d["count"].as_u64().unwrap() > 0,
            "{d}"
        );
        assert!(["info", "warning", "error"].contains(&d["severity"].as_str().unwrap()));
    }
    assert!(
        diags.iter().any(|d| d["first"].is_object()),
        "no location in {diags:?}"
    );
    // stdout is the summary, so it cannot also be the output
    assert!(run_err(&["convert", &demo(), "-", "--to", "chrome", "--json"]).contains("--json"));
}

#[test]
fn json_summary_of_a_batch_lists_every_conversion() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = run_ok(&[
        "convert",
        &fixture("cupti"),
        "--to",
        "chrome",
        "-o",
        s(&out),
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let conv = v["conversions"].as_array().unwrap();
    assert!(conv.len() >= 3, "{v}");
    for c in conv {
        let f = c["output"]["files"][0].as_str().unwrap();
        assert!(Path::new(f).is_file(), "{f}");
    }
}

/// A fake `nsys` that records its arguments and writes `sqlite` as the export.
fn fake_nsys(dir: &Path, sqlite: Option<&Path>) -> (PathBuf, PathBuf) {
    let log = dir.join("nsys-args.txt");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("nsys");
    let body = match sqlite {
        // the output path follows --output
        Some(db) => format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nwhile [ $# -gt 0 ]; do [ \"$1\" = --output ] && cp '{}' \"$2\"; shift; done\n",
            log.display(),
            db.display()
        ),
        None => format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\necho 'ERROR: report is corrupt' >&2\nexit 3\n",
            log.display()
        ),
    };
    std::fs::write(&script, body).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (bin, log)
}

/// The smallest Nsight Systems export of the corpus, else a tiny one made here.
fn small_nsys_sqlite(dir: &Path) -> PathBuf {
    let mut files = corpus_files("nsys");
    files.retain(|f| f.extension().is_some_and(|e| e == "sqlite"));
    files.sort_by_key(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(u64::MAX));
    if let Some(f) = files.first() {
        return f.clone();
    }
    let p = dir.join("tiny.sqlite");
    let db = rusqlite::Connection::open(&p).unwrap();
    db.execute_batch(
        "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);
         INSERT INTO StringIds VALUES (1, 'step');
         CREATE TABLE NVTX_EVENTS(start INTEGER, end INTEGER, eventType INTEGER, rangeId INTEGER,
           category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
           textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER,
           doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL,
           jsonTextId INTEGER, jsonText TEXT);
         INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid, domainId)
           VALUES (1000, 5000, 59, 'step', 281474976710656 + 100 * 16777216 + 100, 0);",
    )
    .unwrap();
    p
}

#[test]
fn nsys_reports_go_through_nsys_export() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_nsys_sqlite(dir.path());
    let report = dir.path().join("my run.nsys-rep");
    std::fs::write(&report, b"not a sqlite file: nsys's own format").unwrap();
    let (bin, log) = fake_nsys(dir.path(), Some(&db));
    let out = dir.path().join("o.json");
    let r = tracex()
        .args(["convert", s(&report), s(&out), "--json"])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    succeeded(&r);
    let args: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(
        &args[..5],
        ["export", "--type", "sqlite", "--force-overwrite", "true"]
    );
    assert_eq!(args[5], "--output");
    assert!(args[6].ends_with("my run.sqlite"), "{args:?}");
    assert_eq!(args[7], s(&report));
    // the temporary export is gone, and the conversion is the SQLite file's
    assert!(!Path::new(&args[6]).exists());
    let v: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["conversions"][0]["inputs"][0]["path"], s(&report));
    assert_eq!(v["conversions"][0]["inputs"][0]["format"], "nsys");
    let direct = dir.path().join("direct.json");
    run_ok(&["convert", s(&db), s(&direct)]);
    assert_eq!(phases(&out), phases(&direct));

    // nsys failing: its message is passed on, nothing is written
    let (bin, _) = fake_nsys(&dir.path().join("broken"), None);
    let out3 = dir.path().join("o3.json");
    let r = tracex()
        .args(["convert", s(&report), s(&out3)])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("report is corrupt") && err.contains("exit status: 3"),
        "{err}"
    );
    assert!(!out3.exists());

    // no nsys: the exact command to run
    let qd = dir.path().join("old.qdrep");
    std::fs::write(&qd, b"x").unwrap();
    let r = tracex()
        .args(["convert", s(&qd), s(&out3)])
        .env("PATH", "/usr/bin:/bin")
        .env_remove("TRACEX_NSYS")
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8_lossy(&r.stderr);
    let want = format!(
        "nsys export --type sqlite --force-overwrite true --output {} {}",
        s(&dir.path().join("old.sqlite")),
        s(&qd)
    );
    assert!(err.contains(&want), "{err}\nwanted: {want}");
    assert!(!out3.exists());
}

/// What an independent XML parser (Python's) reads from an SVG flame graph: the
/// `total_samples` of the frames, and each frame's name and count from its title.
fn read_svg(path: &Path) -> Option<(i64, Vec<(String, i64)>)> {
    let script = r#"
import sys, re, xml.etree.ElementTree as ET
ns = '{http://www.w3.org/2000/svg}'
root = ET.parse(sys.argv[1]).getroot()
total = [e.get('total_samples') for e in root.iter() if e.get('total_samples')]
print(total[0])
for t in root.iter(ns + 'title'):
    m = re.match(r'^(.*) \(([\d,]+) [^,]*?, [\d.]+%\)$', t.text or '', re.S)
    if m:
        print(m.group(2).replace(',', '') + '\t' + m.group(1))
"#;
    let out = Command::new(tool("python3")?)
        .arg("-c")
        .arg(script)
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} is not well-formed XML: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let total = lines.next().unwrap().parse().unwrap();
    let frames = lines
        .map(|l| {
            let (n, name) = l.split_once('\t').unwrap();
            (name.to_string(), n.parse().unwrap())
        })
        .collect();
    Some((total, frames))
}

/// Converts `ins` to .folded and .svg with `extra` options and checks that the picture has
/// the folded output's total, its root and every stack's leaf frame.
fn svg_matches_folded(dir: &Path, ins: &[String], extra: &[&str], tag: &str) -> Option<String> {
    let folded = dir.join(format!("{tag}.folded"));
    let svg = dir.join(format!("{tag}.svg"));
    for out in [&folded, &svg] {
        let mut args: Vec<&str> = vec!["convert"];
        args.extend(ins.iter().map(String::as_str));
        args.push(s(out));
        args.extend_from_slice(extra);
        run_ok(&args);
    }
    let text = std::fs::read_to_string(&folded).unwrap();
    let mut total = 0i64;
    let mut leaves = std::collections::BTreeSet::new();
    for l in text.lines() {
        let (stack, w) = l.rsplit_once(' ').unwrap();
        total += w.parse::<i64>().unwrap();
        leaves.insert(stack.rsplit(';').next().unwrap().to_string());
    }
    let (svg_total, frames) = read_svg(&svg)?;
    assert_eq!(svg_total, total, "{tag}: SVG total vs folded");
    let all = frames.iter().find(|(n, _)| n == "all").expect("root frame");
    assert_eq!(all.1, total, "{tag}: the root frame's count");
    let drawn: std::collections::BTreeSet<&str> = frames.iter().map(|(n, _)| n.as_str()).collect();
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    // inferno leaves out frames under 0.1 px; with few stacks all are drawn
    if leaves.len() < 50 {
        for leaf in &leaves {
            // inferno draws flamegraph.pl's annotations (`_[k]` kernel, `_[j]` JIT, ...) as colours
            let leaf = ["_[k]", "_[j]", "_[i]", "_[w]"]
                .iter()
                .find_map(|a| leaf.strip_suffix(a))
                .unwrap_or(leaf);
            let escaped = leaf
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;");
            assert!(
                drawn.contains(leaf) || svg_text.contains(&escaped),
                "{tag}: leaf {leaf} not drawn"
            );
        }
    }
    Some(svg_text)
}

#[test]
fn svg_flame_graphs_have_the_folded_weights() {
    let dir = tempfile::tempdir().unwrap();
    let cupti = vec![fixture("cupti/app_cpu.txt"), fixture("cupti/app_gpu.json")];
    let Some(svg) = svg_matches_folded(dir.path(), &cupti, &[], "launches") else {
        eprintln!("note: python3 missing; SVG flame graphs not checked");
        return;
    };
    assert!(svg.contains("GPU launches by CPU call stack"), "title");
    assert!(
        svg.contains("app_cpu.txt + app_gpu.json"),
        "subtitle names the inputs"
    );
    let svg = svg_matches_folded(dir.path(), &cupti, &["--weight", "gpu-ns"], "gpu_ns").unwrap();
    assert!(svg.contains("GPU time by CPU call stack") && svg.contains("--weight gpu-ns"));
    let svg = svg_matches_folded(
        dir.path(),
        &[demo()],
        &["--fold", "timeline", "--title", "My step"],
        "timeline",
    )
    .unwrap();
    assert!(svg.contains(">My step<"));
    svg_matches_folded(
        dir.path(),
        &[fixture("folded/stacks.folded")],
        &["--inverted"],
        "plain",
    )
    .unwrap();
    // the same input draws the same picture
    let again = dir.path().join("again.svg");
    run_ok(&["convert", &cupti[0], &cupti[1], s(&again)]);
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(dir.path().join("launches.svg")).unwrap()
    );
    // every nsys export of the corpus: GPU time by CPU stack where it has one, else samples
    let mut n = 0;
    for f in corpus_files("nsys")
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "sqlite"))
        .take(4)
    {
        let tag = format!("nsys{n}");
        let folded = dir.path().join(format!("{tag}.probe.folded"));
        if tracex()
            .args(["convert", s(&f), s(&folded)])
            .status()
            .unwrap()
            .success()
        {
            svg_matches_folded(dir.path(), &[f.to_string_lossy().into_owned()], &[], &tag);
            n += 1;
        }
    }
    eprintln!("svg: checked {n} nsys exports of the corpus");
}

/// The slices (X events) of every chunk, and whether each chunk is a complete trace.
#[test]
fn split_by_duration_and_size_writes_self_contained_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.json");
    run_ok(&["convert", &demo(), s(&whole)]);
    let whole_ph = phases(&whole);
    let v: Value = serde_json::from_slice(&std::fs::read(&whole).unwrap()).unwrap();
    let names = |v: &Value| -> std::collections::BTreeSet<String> {
        v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "M")
            .map(|e| e["args"]["name"].to_string())
            .collect()
    };
    let whole_names = names(&v);

    let base = dir.path().join("part.json");
    let o = run_ok(&["convert", &demo(), s(&base), "--split-by", "2ms", "--json"]);
    let sum: Value = serde_json::from_slice(&o.stdout).unwrap();
    let files: Vec<String> = sum["conversions"][0]["output"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert!(files.len() >= 2, "{files:?}");
    for (i, f) in files.iter().enumerate() {
        assert!(f.ends_with(&format!("part.{:03}.json", i + 1)), "{f}");
    }
    let mut slices = 0;
    let mut ends = 0;
    let mut cut = 0;
    for f in &files {
        let v: Value = serde_json::from_slice(&std::fs::read(f).unwrap())
            .unwrap_or_else(|e| panic!("{f} is not JSON: {e}"));
        // each chunk names the processes and threads it uses
        let chunk_names = names(&v);
        assert!(
            !chunk_names.is_empty() && chunk_names.is_subset(&whole_names),
            "{f}"
        );
        for e in v["traceEvents"].as_array().unwrap() {
            if e["ph"] == "X" {
                slices += 1;
                if let Some(m) = e["args"].get("tracex_split") {
                    cut += 1;
                    let m = m.as_str().unwrap();
                    assert!(["start", "end", "both"].contains(&m), "{m}");
                    ends += u64::from(m != "start");
                    assert!(e["args"]["tracex_original_dur"].is_number());
                }
            }
        }
    }
    assert!(cut > 0, "no slice crossed a 2 ms cut");
    // every cut of a slice adds one part, and the part before each cut is marked end or both
    assert_eq!(slices - whole_ph["X"], ends, "{cut} marked parts");
    let diag = sum["conversions"][0]["diagnostics"].as_array().unwrap();
    assert!(
        diag.iter().any(|d| d["name"] == "split_slice_cut"),
        "{diag:?}"
    );

    // by size: every chunk but the last near the target
    let sized = dir.path().join("sized.json");
    let o = run_ok(&["convert", &demo(), s(&sized), "--split-by", "20k", "--json"]);
    let sum: Value = serde_json::from_slice(&o.stdout).unwrap();
    let files = sum["conversions"][0]["output"]["files"].as_array().unwrap();
    assert!(files.len() >= 2, "{sum}");
    let mut x = 0;
    for f in files {
        let p = f.as_str().unwrap();
        let len = std::fs::metadata(p).unwrap().len();
        assert!(len < 2 * 20 * 1024, "{p}: {len} bytes");
        x += phases(Path::new(p)).get("X").copied().unwrap_or(0);
    }
    assert!(x >= whole_ph["X"]);
    // nsys exports with CPU samples: a chunk's new stack frames count in its size
    let mut n = 0;
    for f in corpus_files("nsys")
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "sqlite"))
    {
        let out = dir.path().join(format!("nsys{n}.json"));
        let o = tracex()
            .args(["convert", s(&f), s(&out), "--split-by", "300k", "--json"])
            .output()
            .unwrap();
        if !o.status.success() {
            continue;
        }
        let sum: Value = serde_json::from_slice(&o.stdout).unwrap();
        for c in sum["conversions"][0]["output"]["files"].as_array().unwrap() {
            let len = std::fs::metadata(c.as_str().unwrap()).unwrap().len();
            assert!(
                len < 300 * 1024 * 3 / 2,
                "{}: {c} has {len} bytes",
                f.display()
            );
        }
        n += 1;
    }
    eprintln!("split-by size: checked {n} nsys exports of the corpus");
    // a failed split leaves no chunk; existing chunks are refused without --force
    let err = run_err(&["convert", &demo(), s(&base), "--split-by", "2ms"]);
    assert!(err.contains("exists"), "{err}");
    assert!(
        run_err(&["convert", &demo(), s(&base), "--split-by", "12 apples"]).contains("--split-by")
    );
}

#[test]
fn shards_are_disjoint_complete_and_identical_to_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let ins = dir.path().join("in");
    for sub in ["chrome", "cupti", "folded"] {
        let to = ins.join(sub);
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(root().join("fixtures").join(sub)).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
    let whole = dir.path().join("whole");
    let _ = tracex()
        .args(["convert", s(&ins), "--to", "chrome", "-o", s(&whole)])
        .output()
        .unwrap();
    let listing = |d: &Path| -> BTreeMap<PathBuf, Vec<u8>> {
        let mut m = BTreeMap::new();
        let mut stack = vec![d.to_path_buf()];
        while let Some(x) = stack.pop() {
            for e in std::fs::read_dir(&x).into_iter().flatten() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    m.insert(
                        p.strip_prefix(d).unwrap().to_path_buf(),
                        std::fs::read(&p).unwrap(),
                    );
                }
            }
        }
        m
    };
    let expected = listing(&whole);
    assert!(expected.len() >= 10, "{} outputs", expected.len());
    let n = 3;
    let mut seen: BTreeMap<PathBuf, Vec<u8>> = BTreeMap::new();
    for i in 0..n {
        let out = dir.path().join(format!("shard{i}"));
        let r = tracex()
            .args(["convert", s(&ins), "--to", "chrome", "-o", s(&out)])
            .arg("--shard")
            .arg(format!("{i}/{n}"))
            .output()
            .unwrap();
        assert!(r.status.code().is_some_and(|c| c <= 1));
        let got = listing(&out);
        assert!(!got.is_empty(), "shard {i} converted nothing");
        for (k, v) in got {
            assert!(
                seen.insert(k.clone(), v).is_none(),
                "{} in two shards",
                k.display()
            );
        }
    }
    assert_eq!(
        seen.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    assert!(seen == expected, "sharded outputs differ from one run's");
    assert!(run_err(&[
        "convert",
        s(&ins),
        "--to",
        "chrome",
        "-o",
        s(&whole),
        "--shard",
        "3/3"
    ])
    .contains("--shard"));
    assert!(run_err(&[
        "convert",
        &demo(),
        s(&dir.path().join("x.json")),
        "--shard",
        "0/2"
    ])
    .contains("--shard"));
}

/// Runs `cmd` in a user and mount namespace where every libotf2 shared library is hidden
/// (bind-mounted over by an empty file): as on a machine without libotf2. `None` when
/// unprivileged namespaces are not allowed here.
fn without_libotf2(script: &str) -> Option<std::process::Output> {
    let unshare = tool("unshare")?;
    let probe = Command::new(&unshare).args(["-rm", "true"]).output().ok()?;
    if !probe.status.success() {
        return None;
    }
    let hide = "for f in /usr/lib/*/libopen-trace-format2.so* /usr/lib/*/libotf2*.so* /usr/lib/libotf2*.so* /usr/local/lib/libotf2*.so*; do [ -e \"$f\" ] && mount --bind /dev/null \"$f\"; done; ";
    Some(
        Command::new(unshare)
            .args(["-rm", "sh", "-c"])
            .arg(format!("{hide}{script}"))
            .env("LD_LIBRARY_PATH", "")
            .output()
            .unwrap(),
    )
}

#[test]
fn release_archive_runs_without_libotf2() {
    let dir = tempfile::tempdir().unwrap();
    let bin = std::env::var_os("TRACEX_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tracex")));
    let out = Command::new(root().join("scripts/dist.sh"))
        .env("TRACEX_BIN", &bin)
        .env("TRACEX_DIST_DIR", dir.path())
        .output()
        .unwrap();
    succeeded(&out);
    let archive = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let unpacked = dir.path().join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    let st = Command::new("tar")
        .args(["-xzf", s(&archive), "-C", s(&unpacked)])
        .status()
        .unwrap();
    assert!(st.success());
    let top = std::fs::read_dir(&unpacked)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for f in [
        "tracex",
        "README.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "THIRD-PARTY-NOTICES",
        "complete/tracex.bash",
        "complete/tracex.zsh",
        "complete/tracex.fish",
        "man/tracex.1",
        "man/tracex-convert.1",
    ] {
        let p = top.join(f);
        assert!(
            std::fs::metadata(&p).is_ok_and(|m| m.len() > 0),
            "{} missing from the archive",
            f
        );
    }
    let relocated = top.join("tracex");
    let version = String::from_utf8(run_ok(&["--version"]).stdout).unwrap();
    if !version.contains("+otf2") {
        eprintln!("note: built without OTF2; the libotf2 independence is not checked");
        return;
    }
    // the binary does not need libotf2 at load time
    if let Some(readelf) = tool("readelf") {
        let o = Command::new(readelf)
            .arg("-d")
            .arg(&relocated)
            .output()
            .unwrap();
        let needed = String::from_utf8_lossy(&o.stdout);
        assert!(
            !needed.contains("otf2") && !needed.contains("trace-format"),
            "{needed}"
        );
    }
    let otf2 = dir.path().join("t.otf2");
    let script = format!(
        "for f in /usr/lib/*/libopen-trace-format2.so*; do [ ! -s \"$f\" ] || exit 9; done; '{bin}' --quiet convert '{demo}' '{otf2}' && '{bin}' --quiet info '{otf2}' >/dev/null",
        bin = relocated.display(),
        demo = demo(),
        otf2 = otf2.display()
    );
    // the namespace really hides libotf2: a program linked to it cannot start there
    if let Some(print) = tool("otf2-print") {
        let o = without_libotf2(&format!("'{}' --help", print.display()));
        if let Some(o) = o {
            assert!(!o.status.success(), "otf2-print started without libotf2");
        }
    }
    match without_libotf2(&script) {
        Some(o) => {
            assert!(
                o.status.success(),
                "without libotf2: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            eprintln!("release archive: converted to OTF2 with libotf2 hidden");
        }
        None => {
            eprintln!(
                "note: no unprivileged namespaces here; ran with an empty LD_LIBRARY_PATH only"
            );
            let o = Command::new(&relocated)
                .args(["--quiet", "convert", &demo(), s(&otf2)])
                .env("LD_LIBRARY_PATH", "")
                .output()
                .unwrap();
            succeeded(&o);
        }
    }
    // the OTF2 written without libotf2 installed reads back as the demo's events
    let a = dump(&otf2);
    assert!(a.lines().count() > 10, "{a}");
}

/// maturin: `$TRACEX_MATURIN`, on PATH, or where scripts/setup.sh installs it.
fn maturin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TRACEX_MATURIN") {
        return Some(PathBuf::from(p));
    }
    tool("maturin").or_else(|| {
        let venv = std::env::var_os("TRACEX_MATURIN_VENV")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/tracex/maturin"))
            })?;
        Some(venv.join("bin/maturin")).filter(|p| p.is_file())
    })
}

/// The wheel (`pip install`) as a Python user gets it: built by maturin from pyproject.toml,
/// installed into a fresh venv, its `tracex` command converting the bundled example.
#[test]
fn wheel_installs_into_a_fresh_venv_and_converts() {
    let Some(maturin) = maturin() else {
        eprintln!("note: maturin not installed (scripts/setup.sh installs it); wheel not checked");
        return;
    };
    let Some(python) = tool("python3") else {
        eprintln!("note: python3 missing; wheel not checked");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wheels = dir.path().join("wheels");
    // the release profile of `make test`'s build: maturin reuses it
    let out = Command::new(&maturin)
        .args(["build", "--release", "--locked", "--quiet", "--out"])
        .arg(&wheels)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "maturin build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wheel = std::fs::read_dir(&wheels)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("a wheel");
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("tracex_convert-{}-", env!("CARGO_PKG_VERSION"))),
        "{name}"
    );
    let venv = dir.path().join("venv");
    let st = Command::new(python)
        .arg("-m")
        .arg("venv")
        .arg(&venv)
        .status()
        .unwrap();
    assert!(st.success());
    let out = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--no-index"])
        .arg(&wheel)
        .output()
        .unwrap();
    succeeded(&out);
    let notices = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .map(|e| e.unwrap().path().join("site-packages"))
        .map(|sp| {
            sp.join(format!(
                "tracex_convert-{}.dist-info/licenses/THIRD-PARTY-NOTICES",
                env!("CARGO_PKG_VERSION")
            ))
        })
        .find(|p| p.is_file());
    assert!(
        notices.is_some(),
        "the wheel carries no THIRD-PARTY-NOTICES"
    );
    let installed = venv.join("bin/tracex");
    assert!(installed.is_file(), "no tracex in the venv");
    let json = dir.path().join("demo.json");
    let out = Command::new(&installed)
        .args(["--quiet", "convert", &demo(), s(&json), "--json"])
        .output()
        .unwrap();
    succeeded(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["conversions"][0]["output"]["format"], "chrome");
    // the same events as the binary under test writes
    let direct = dir.path().join("direct.json");
    run_ok(&["convert", &demo(), s(&direct)]);
    assert_eq!(phases(&json), phases(&direct));
    eprintln!("wheel: {name} installed and converted the demo");
}

/// Every published crate has what crates.io asks for, and depends on its siblings by version
/// as well as path (`cargo package --workspace` is the full check).
#[test]
fn crates_are_ready_for_crates_io() {
    let ws = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let members: Vec<&str> = ws
        .split("members = [")
        .nth(1)
        .unwrap()
        .split(']')
        .next()
        .unwrap()
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .collect();
    assert!(members.len() >= 9, "{members:?}");
    // dependency lines (`name = { path = ... }`), not the targets' `path = "src/..."`
    for line in ws.lines().filter(|l| l.contains("{ path = \"")) {
        if line.trim_start().starts_with("tracex-gen") {
            continue;
        }
        assert!(
            line.contains("version = \""),
            "unversioned path dependency: {line}"
        );
    }
    let mut checked = 0;
    for m in members {
        let dir = root().join(m);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        if manifest.contains("publish = false") {
            continue;
        }
        for key in ["description", "license", "keywords", "categories"] {
            assert!(manifest.contains(key), "{m}/Cargo.toml lacks {key}");
        }
        for f in ["LICENSE-MIT", "LICENSE-APACHE"] {
            let text = std::fs::read_to_string(dir.join(f)).unwrap_or_else(|_| panic!("{m}/{f}"));
            assert!(
                text.contains("Permission is hereby granted") || text.contains("Apache License")
            );
        }
        checked += 1;
    }
    assert!(checked >= 8);
}

/// THIRD-PARTY-NOTICES (shipped in the archive, the wheel and the image) is what
/// scripts/notices.py makes from Cargo.lock today: a new or updated dependency without its
/// notice fails here.
#[test]
fn third_party_notices_are_current() {
    if tool("python3").is_none()
        || !Path::new("/usr/share/doc/libotf2-trace-dev/copyright").is_file()
    {
        eprintln!("note: python3 or libotf2-trace-dev missing; notices not checked");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("notices");
    let out = Command::new(root().join("scripts/notices.py"))
        .arg(&fresh)
        .current_dir(root())
        .output()
        .unwrap();
    succeeded(&out);
    let fresh = std::fs::read_to_string(&fresh).unwrap();
    let committed = std::fs::read_to_string(root().join("THIRD-PARTY-NOTICES")).unwrap();
    assert!(
        fresh == committed,
        "THIRD-PARTY-NOTICES is out of date: run scripts/notices.py THIRD-PARTY-NOTICES"
    );
    for needle in [
        "License: BSD-3-Clause",
        "SQLite",
        "rusqlite",
        "inferno",
        "Permission is hereby granted",
    ] {
        assert!(committed.contains(needle), "notices lack {needle:?}");
    }
    eprintln!("notices: {} lines, current", committed.lines().count());
}
