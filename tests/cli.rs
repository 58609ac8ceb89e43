//! The command line as a user meets it: help, formats, errors, overwriting, info.

use crate::common::*;

fn demo() -> String {
    root()
        .join("fixtures/demo/gpu_training_step.json")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn help_and_formats() {
    let out = run_ok(&["--help"]);
    let help = String::from_utf8(out.stdout).unwrap();
    for cmd in ["convert", "info", "dump", "formats"] {
        assert!(help.contains(cmd), "--help lacks {cmd}: {help}");
    }
    let out = run_ok(&["formats"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("chrome") && text.contains(".json.gz"),
        "{text}"
    );
    let out = run_ok(&["formats", "--diagnostics"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("slice_partial_overlap") && text.contains("chrome_unmatched_end"),
        "{text}"
    );
}

#[test]
fn output_rules() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.json");
    let o = out.to_str().unwrap();
    run_ok(&["convert", &demo(), o]);
    let first = std::fs::read(&out).unwrap();
    // an existing output is refused without --force, and left as it was
    let err = run_err(&["convert", &demo(), o]);
    assert!(err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), first);
    run_ok(&["convert", "--force", &demo(), o]);
    // the input is never the output
    let copy = dir.path().join("in.json");
    std::fs::copy(demo(), &copy).unwrap();
    let before = std::fs::read(&copy).unwrap();
    let err = run_err(&[
        "convert",
        "-f",
        copy.to_str().unwrap(),
        copy.to_str().unwrap(),
    ]);
    assert!(err.contains("never overwrites"), "{err}");
    assert_eq!(std::fs::read(&copy).unwrap(), before);
    // unknown output extension and unknown formats are clear errors
    let err = run_err(&[
        "convert",
        &demo(),
        dir.path().join("o.xyz").to_str().unwrap(),
    ]);
    assert!(err.contains("--to"), "{err}");
    let fresh = dir.path().join("fresh.json");
    let f = fresh.to_str().unwrap();
    let err = run_err(&["convert", "--to", "nope", &demo(), f]);
    assert!(err.contains("unknown output format"), "{err}");
    let err = run_err(&["convert", "--from", "nope", &demo(), f]);
    assert!(err.contains("unknown input format"), "{err}");
    let missing = dir.path().join("missing.json");
    let err = run_err(&["convert", missing.to_str().unwrap(), f]);
    assert!(err.contains("cannot open"), "{err}");
}

#[test]
fn info_counts_events() {
    let out = run_ok(&["info", "--json", &demo()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // counted independently from the fixture: see fixtures/demo/README.md
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(demo()).unwrap()).unwrap();
    let evs = doc["traceEvents"].as_array().unwrap();
    let count = |ph: &str| evs.iter().filter(|e| e["ph"] == ph).count() as u64;
    let counters: u64 = evs
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| e["args"].as_object().unwrap().len() as u64)
        .sum();
    assert_eq!(v["format"], "chrome");
    assert_eq!(v["events"]["slice"], count("X") + count("B") + count("b"));
    assert_eq!(v["events"]["counter"], counters);
    assert_eq!(v["events"]["instant"], count("i"));
    assert_eq!(v["flows"], count("s"));
    assert_eq!(
        v["events"]["sample"],
        doc["samples"].as_array().unwrap().len() as u64
    );
    assert_eq!(v["slices_by_kind"]["kernel"], 12);
    assert_eq!(v["time"]["first_ns"], 1_700_000_000_000_000i64);
    let text = String::from_utf8(run_ok(&["info", &demo()]).stdout).unwrap();
    assert!(
        text.contains("format:     chrome") && text.contains("flows:      12"),
        "{text}"
    );
}

/// `tracex dump big.json | head` must not panic or fail when the reader goes away.
#[test]
fn closed_stdout_is_not_an_error() {
    use std::io::Read;
    // big enough that the output cannot fit in the pipe's buffer
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.json");
    let events: Vec<String> = (0..20_000)
        .map(|i| {
            format!(
                r#"{{"ph":"X","name":"e{i}","pid":1,"tid":{},"ts":{i},"dur":1}}"#,
                i % 500
            )
        })
        .collect();
    std::fs::write(&big, format!("[{}]", events.join(","))).unwrap();
    for cmd in ["dump", "info"] {
        let mut child = tracex()
            .args([cmd, big.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 8];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // stdout is closed now; whatever is written after this fails with EPIPE
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{cmd}: {err}");
        assert!(out.status.success(), "{cmd}: {:?} {err}", out.status);
    }
}

/// docs/diagnostics.md lists every diagnostic the program can report.
#[test]
fn diagnostics_reference_is_complete() {
    let doc = std::fs::read_to_string(root().join("docs/diagnostics.md")).unwrap();
    let out = String::from_utf8(run_ok(&["formats", "--diagnostics"]).stdout).unwrap();
    let mut n = 0;
    for line in out.lines() {
        let name = line.split_whitespace().next().unwrap();
        assert!(
            doc.contains(&format!("`{name}`")),
            "docs/diagnostics.md lacks {name}"
        );
        n += 1;
    }
    assert!(n > 100, "only {n} diagnostics listed");
}
