//! Filters on every conversion: time window (clipping, counters carried, flows), processes,
//! names, kinds.

use std::path::PathBuf;

use crate::common::*;

/// A trace starting at 1000 µs: a parent slice on pid 1 crossing the window edges, a kernel
/// launched from it (with a flow), a counter, an instant, and a second process.
fn trace(dir: &std::path::Path) -> PathBuf {
    let p = dir.join("t.json");
    std::fs::write(
        &p,
        r#"{"traceEvents":[
{"ph":"X","name":"step","cat":"user_annotation","pid":1,"tid":1,"ts":1000,"dur":100},
{"ph":"X","name":"cudaLaunchKernel","cat":"cuda_runtime","pid":1,"tid":1,"ts":1010,"dur":5},
{"ph":"X","name":"early","pid":1,"tid":1,"ts":1001,"dur":3},
{"ph":"X","name":"gemm","cat":"kernel","pid":0,"tid":7,"ts":1030,"dur":20},
{"ph":"s","id":1,"name":"ac2g","cat":"ac2g","pid":1,"tid":1,"ts":1010},
{"ph":"f","id":1,"name":"ac2g","cat":"ac2g","pid":0,"tid":7,"ts":1030,"bp":"e"},
{"ph":"X","name":"late launch","cat":"cuda_runtime","pid":1,"tid":1,"ts":1040,"dur":5},
{"ph":"X","name":"late kernel","cat":"kernel","pid":0,"tid":7,"ts":1070,"dur":5},
{"ph":"s","id":2,"name":"ac2g","cat":"ac2g","pid":1,"tid":1,"ts":1040},
{"ph":"f","id":2,"name":"ac2g","cat":"ac2g","pid":0,"tid":7,"ts":1070,"bp":"e"},
{"ph":"C","name":"mem","pid":1,"ts":1000,"args":{"bytes":10}},
{"ph":"C","name":"mem","pid":1,"ts":1020,"args":{"bytes":20}},
{"ph":"C","name":"mem","pid":1,"ts":1050,"args":{"bytes":30}},
{"ph":"i","name":"mark","s":"t","pid":1,"tid":1,"ts":1025},
{"ph":"X","name":"other process","pid":2,"tid":2,"ts":1030,"dur":10}
]}"#,
    )
    .unwrap();
    p
}

fn dump_filtered(path: &std::path::Path, filters: &[&str]) -> String {
    let mut args = vec!["dump", path.to_str().unwrap()];
    args.extend_from_slice(filters);
    String::from_utf8(run_ok(&args).stdout).unwrap()
}

#[test]
fn time_window_clips_and_carries() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    // window 22us..60us after the first event (1000 µs): [1022, 1060)
    let d = dump_filtered(&t, &["--time-range", "22us:60us"]);
    // the parent step [1000,1100] is clipped on both sides and keeps its original extent in args
    assert!(d.contains(r#"slice ts=1022000 dur=38000 name="step" cat="user_annotation" args={"tracex_clipped":"both", "tracex_original_ts":1000000, "tracex_original_dur":100000}"#), "{d}");
    // the kernel [1030,1050] is inside; the late kernel (1070) and early slices are out
    assert!(
        d.contains(r#"slice ts=1030000 dur=20000 name="gemm""#),
        "{d}"
    );
    assert!(
        !d.contains("late kernel") && !d.contains("\"early\""),
        "{d}"
    );
    // the first launch (1010) is outside, so its flow is gone entirely; the late launch's flow
    // starts inside and ends outside: cut, counted
    assert!(!d.contains("K0@1010000"), "{d}");
    assert!(d.contains("diag filter_flow_cut count=1"), "{d}");
    // the counter's level at the window start (20, set at 1020) is carried to 1022; 30 at 1050
    assert!(d.contains("value ts=1022000 value=20"), "{d}");
    assert!(d.contains("value ts=1050000 value=30"), "{d}");
    assert!(!d.contains("value=10"), "{d}");
    assert!(d.contains("instant ts=1025000 name=\"mark\""), "{d}");
    assert!(d.contains("diag filter_clipped count="), "{d}");

    // absolute: the same window in the trace's own clock
    let a = dump_filtered(&t, &["--time-range", "1022us:1060us", "--absolute"]);
    assert_eq!(a, d);
    // open-ended
    let late = dump_filtered(&t, &["--time-range", "65us:"]);
    assert!(
        late.contains("late kernel") && !late.contains("\"gemm\""),
        "{late}"
    );
}

#[test]
fn process_name_and_kind_filters() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let d = dump_filtered(&t, &["--pid", "2"]);
    assert!(
        d.contains("other process") && !d.contains("\"step\""),
        "{d}"
    );
    // GPU work (pid 0 here is a plain process in Chrome; only device processes are exempt)
    let d = dump_filtered(&t, &["--include", "^gemm$|^cudaLaunch"]);
    assert!(
        d.contains("\"gemm\"") && d.contains("cudaLaunchKernel") && !d.contains("late"),
        "{d}"
    );
    // the flow between the two kept slices survives; the other one lost its ends
    assert!(d.contains("flow name=\"ac2g\""), "{d}");
    assert_eq!(d.matches("flow name").count(), 1, "{d}");
    let d = dump_filtered(&t, &["--exclude", "launch|Launch"]);
    assert!(
        !d.contains("cudaLaunchKernel") && !d.contains("late launch") && d.contains("late kernel"),
        "{d}"
    );
    assert!(!d.contains("flow name"), "{d}");
    // -name drops a kind and keeps the rest; categories answer too (ac2g flows stay with the
    // launches, `cuda_runtime` is cuda-api)
    let d = dump_filtered(&t, &["--activity=-kernel,-counters"]);
    assert!(
        !d.contains("\"gemm\"") && !d.contains("value=") && d.contains("\"step\""),
        "{d}"
    );
    let d = dump_filtered(&t, &["--activity", "kernel,counters"]);
    assert!(
        d.contains("\"gemm\"")
            && d.contains("value=20")
            && !d.contains("\"step\"")
            && !d.contains("mark"),
        "{d}"
    );
}

#[test]
fn bad_filters_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let t = t.to_str().unwrap();
    assert!(run_err(&["dump", t, "--time-range", "5s"]).contains("A:B"));
    assert!(run_err(&["dump", t, "--time-range", "2s:1s"]).contains("not after"));
    assert!(run_err(&["dump", t, "--time-range", "x:1s"]).contains("not a time"));
    assert!(run_err(&["dump", t, "--activity", "gpu"]).contains("one of"));
    assert!(run_err(&["dump", t, "--include", "("]).contains("--include"));
    assert!(run_err(&["dump", t, "--absolute"]).contains("--time-range"));
}
