//! Several traces at once: one timeline from several reports, and batch conversion of folders.

use std::path::Path;

use crate::common::*;

/// A rank's trace: a step on pid 100 (the same pid in every rank), a flow with id 1 (the same id
/// in every rank), times relative to `base_ns` given as Kineto's baseTimeNanoseconds.
fn rank(dir: &Path, name: &str, base_ns: Option<i64>, step_us: i64) -> String {
    let base = base_ns
        .map(|b| format!(",\"baseTimeNanoseconds\":{b}"))
        .unwrap_or_default();
    let text = format!(
        r#"{{"traceEvents":[
{{"ph":"M","name":"process_name","pid":100,"args":{{"name":"python"}}}},
{{"ph":"X","name":"step","pid":100,"tid":1,"ts":{step_us},"dur":10}},
{{"ph":"X","name":"launch","pid":100,"tid":1,"ts":{s1},"dur":1}},
{{"ph":"X","name":"kernel","pid":0,"tid":7,"ts":{s5},"dur":2}},
{{"ph":"s","id":1,"name":"f","cat":"c","pid":100,"tid":1,"ts":{s1}}},
{{"ph":"f","id":1,"name":"f","cat":"c","pid":0,"tid":7,"ts":{s5},"bp":"e"}}
]{base}}}"#,
        s1 = step_us + 1,
        s5 = step_us + 5
    );
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn reports_become_one_timeline() {
    let dir = tempfile::tempdir().unwrap();
    // rank 1 started 2 ms after rank 0 on the same clock; both wrote ts 0 at their own start
    let r0 = rank(
        dir.path(),
        "rank0.json",
        Some(1_700_000_000_000_000_000),
        100,
    );
    let r1 = rank(
        dir.path(),
        "rank1.json",
        Some(1_700_000_000_002_000_000),
        100,
    );
    let out = dir.path().join("merged.json");
    let o = out.to_str().unwrap();
    run_ok(&["convert", &r0, &r1, o]);
    let d = dump(&out);
    // aligned on the clock: rank1's step is 2 ms (2 000 000 ns) later
    assert!(
        d.contains("clock origin_unix_ns=1700000000000000000"),
        "{d}"
    );
    assert!(d.contains("slice ts=100000 dur=10000 name=\"step\""), "{d}");
    assert!(
        d.contains("slice ts=2100000 dur=10000 name=\"step\""),
        "{d}"
    );
    // each input keeps its own processes (same pid 100 in both) and is named after its file
    assert!(
        d.contains("name=\"[rank0.json] python\"") && d.contains("name=\"[rank1.json] python\""),
        "{d}"
    );
    assert!(
        d.contains("host=\"rank0.json\"") && d.contains("host=\"rank1.json\""),
        "{d}"
    );
    // flow ids are scoped per input: two flows, each within its rank
    assert_eq!(d.matches("\nflow ").count(), 2, "{d}");

    // --align start lines both up at their first event
    run_ok(&["convert", "-f", "--align", "start", &r0, &r1, o]);
    let d = dump(&out);
    assert_eq!(
        d.matches("slice ts=100000 dur=10000 name=\"step\"").count(),
        2,
        "{d}"
    );

    // inputs without a clock origin whose times are Unix time are on one clock anyway;
    // inputs whose times are not Unix time share their (unknown) base
    let a = rank(dir.path(), "a.json", None, 1_700_000_000_000_000);
    let b = rank(dir.path(), "b.json", None, 1_700_000_000_003_000);
    run_ok(&["convert", "-f", &a, &b, o]);
    let d = dump(&out);
    assert!(
        d.contains("ts=1700000000000000000 dur=10000 name=\"step\""),
        "{d}"
    );
    assert!(
        d.contains("ts=1700000000003000000 dur=10000 name=\"step\""),
        "{d}"
    );

    // a mix: one input with a clock, one without (and not Unix time): lined up at the start,
    // with a diagnostic
    let c = rank(dir.path(), "c.json", None, 5);
    let out2 = dir.path().join("mixed.json");
    let res = tracex_loud()
        .args(["convert", &r0, &c, out2.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(res.status.success());
    assert!(String::from_utf8_lossy(&res.stderr).contains("merge_unaligned ×1"));
    let d = dump(&out2);
    assert_eq!(
        d.matches("slice ts=100000 dur=10000 name=\"step\"").count(),
        2,
        "{d}"
    );
}

#[test]
fn batch_converts_folders_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("runs");
    std::fs::create_dir_all(src.join("day2/deep")).unwrap();
    std::fs::create_dir_all(src.join(".cache")).unwrap();
    let demo = root().join("fixtures/demo/gpu_training_step.json");
    for rel in [
        "a.json",
        "day2/b.json",
        "day2/deep/c.json",
        ".cache/hidden.json",
    ] {
        std::fs::copy(&demo, src.join(rel)).unwrap();
    }
    std::fs::copy(
        root().join("fixtures/chrome/bad_event_middle.json"),
        src.join("day2/broken.json"),
    )
    .unwrap();
    std::fs::write(src.join("notes.txt"), "not a trace").unwrap();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let res = tracex()
        .args([
            "convert",
            src.to_str().unwrap(),
            "--to",
            "chrome",
            "-o",
            o,
            "-j",
            "2",
        ])
        .output()
        .unwrap();
    // one bad file: reported, the rest converted, exit code 1
    assert_eq!(res.status.code(), Some(1));
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(
        err.contains("broken.json") && err.contains("1 of 4 traces failed"),
        "{err}"
    );
    for rel in ["a.json", "day2/b.json", "day2/deep/c.json"] {
        let p = out.join(rel);
        assert_eq!(dump(&p), dump(&demo), "{rel}");
    }
    assert!(!out.join("day2/broken.json").exists());
    assert!(!out.join(".cache").exists());
    // existing outputs are refused per file without --force, replaced with it
    let res = tracex()
        .args([
            "convert",
            src.join("a.json").to_str().unwrap(),
            "--to",
            "chrome",
            "-o",
            o,
        ])
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&res.stderr).contains("--force"));
    run_ok(&[
        "convert",
        "-f",
        src.join("a.json").to_str().unwrap(),
        "--to",
        "chrome",
        "-o",
        o,
    ]);
    // a folder without --to is a clear error
    assert!(run_err(&["convert", src.to_str().unwrap(), o]).contains("--to"));
}
