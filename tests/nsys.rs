//! Nsight Systems SQLite exports: goldens of small databases the tests build with their own DDL,
//! NVIDIA's published DDL and the newest fixture's DDL for tables no real export fills, the
//! fidelity check over every real export (row counts by SQL against `tracex info`, exact spot
//! checks), the order and read-only guarantees, options, and bad inputs.

use std::io::Write;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::Value;
use tracex_ir::mem::MemSink;
use tracex_ir::order::OrderKey;
use tracex_ir::{Defs, Diagnostics, Event, ImportCtx, Progress};

use crate::common::*;

/// Tables of an nsys export as the tests need them (a subset of the real columns; nsys
/// exports have no constraints the importer relies on).
const DDL: &str = "
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER, priority INTEGER, globalTid INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER, id INTEGER, name TEXT, busLocation TEXT, smCount INTEGER);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER, shortName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER,
  blockX INTEGER, blockY INTEGER, blockZ INTEGER, registersPerThread INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER,
  copyKind INTEGER, srcKind INTEGER, dstKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, value INTEGER,
  bytes INTEGER, memKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, end INTEGER, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
  syncType INTEGER, eventId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
  textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL,
  uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE CUDA_CALLCHAINS (id INTEGER, symbol INTEGER, module INTEGER, stackDepth INTEGER,
  PRIMARY KEY (id, stackDepth));
CREATE TABLE OSRT_API (start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,
  nameId INTEGER, returnValue INTEGER, nestingLevel INTEGER, callchainId INTEGER);
CREATE TABLE OSRT_CALLCHAINS (id INTEGER, symbol INTEGER, module INTEGER, stackDepth INTEGER,
  PRIMARY KEY (id, stackDepth));
CREATE TABLE COMPOSITE_EVENTS (id INTEGER PRIMARY KEY, start INTEGER, cpu INTEGER,
  threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER);
CREATE TABLE SAMPLING_CALLCHAINS (id INTEGER, symbol INTEGER, module INTEGER, stackDepth INTEGER,
  PRIMARY KEY (id, stackDepth));
CREATE TABLE SCHED_EVENTS (start INTEGER, cpu INTEGER, isSchedIn INTEGER, globalTid INTEGER);
CREATE TABLE PROFILER_OVERHEAD (start INTEGER, end INTEGER, globalTid INTEGER, nameId INTEGER,
  returnValue INTEGER);
";

/// Global ids of the test processes: machine 1, pids 100 and 200, threads 101/102 and 201.
const NAMES: &str = "
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cudaMemcpyAsync_v3020'),
  (3, 'void gemm<float>(float*, int)'), (4, 'gemm'), (5, 'cuLaunchKernel'),
  (6, 'cudaStreamSynchronize_v3020'), (7, 'main'), (8, 'worker'), (9, 'cudaMemsetAsync_v3020'),
  (10, 'registered inner'), (11, 'unused thread'), (12, 'cudaMalloc'), (13, 'libcudart.so'),
  (14, 'app'), (15, '0x7f00dead'), (16, 'libcuda.so'), (17, 'cudaFree'), (18, 'write'),
  (19, 'libc.so.6'), (20, 'flush'), (21, 'sample_leaf'), (22, 'CUDA profiling initialization');
INSERT INTO PROCESSES VALUES ((1<<48)|(100<<24), 100, 'trainer'), ((1<<48)|(200<<24), 200, 'trainer'),
  ((1<<48)|(300<<24), 300, 'idle');
INSERT INTO ThreadNames VALUES (7, 10, (1<<48)|(100<<24)|101), (8, 10, (1<<48)|(200<<24)|201),
  (11, 10, (1<<48)|(300<<24)|301), (8, 10, (1<<48)|(100<<24)|103);
INSERT INTO TARGET_INFO_GPU VALUES (1<<48, 0, 'NVIDIA H100 80GB HBM3', '0000:18:00.0', 132),
  (1<<48, 1, 'NVIDIA H100 80GB HBM3', '0000:2a:00.0', 132);
INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '2023-11-14T22:13:20', '');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2024.5.1.113'),
  ('EXPORT_SCHEMA_VERSION', '3.13.2'), ('EXPORT_PARAM_TIME_NORMALIZE', 'false');
";

/// CUDA work of two processes whose correlation ids collide, on two GPUs (one shared), with an
/// orphan kernel and two kernels that overlap on one stream.
const CUDA: &str = "
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (1000, 1500, 0, (1<<48)|(100<<24)|101, 1, 1, 0, NULL),
  (1600, 1900, 0, (1<<48)|(100<<24)|101, 2, 2, 0, NULL),
  (2000, 2100, 0, (1<<48)|(100<<24)|101, 3, 9, 0, NULL),
  (2200, 6100, 0, (1<<48)|(100<<24)|101, 4, 6, 0, NULL),
  (1000, 1400, 0, (1<<48)|(200<<24)|201, 1, 1, 0, NULL),
  (3000, 3100, 1, (1<<48)|(200<<24)|201, 2, 5, 0, NULL),
  (5000, 5100, 0, (1<<48)|(100<<24)|101, 5, 12, 2, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (2000, 5000, 0, 1, 7, 1, (1<<48)|(100<<24), 3, 4, 128, 1, 1, 256, 1, 1, 32),
  (1800, 2500, 1, 2, 7, 1, (1<<48)|(200<<24), 3, 4, 64, 2, 1, 128, 1, 1, 40),
  (3500, 4000, 0, 3, 14, 2, (1<<48)|(200<<24), 4, 4, 1, 1, 1, 32, 1, 1, 16),
  (100, 900, 1, 2, 7, 99, (1<<48)|(200<<24), 3, 4, 1, 1, 1, 1, 1, 1, 8),
  (4500, 5500, 0, 1, 7, NULL, (1<<48)|(100<<24), 4, 4, 1, 1, 1, 1, 1, 1, 8);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES
  (5000, 6000, 0, 1, 7, 2, (1<<48)|(100<<24), 1048576, 1, 0, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES
  (2200, 2300, 0, 1, 13, 3, (1<<48)|(100<<24), 0, 4096, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES
  (2210, 6090, 0, 1, 7, 4, (1<<48)|(100<<24), 3, 0);
";

/// NVTX: domains with the same id in two processes, a category, registered and plain names,
/// NVTXT rows, payloads, a colour, start/end ranges that overlap and end on another thread,
/// marks, an open range, a partial overlap, an unknown event type, and kernels launched inside
/// ranges (for nvtx-kernel).
const NVTX: &str = "
INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES
  (-5000, NULL, 75, 'Domain A', (1<<48)|(100<<24)|101, 1),
  (-4000, NULL, 75, 'Domain B', (1<<48)|(200<<24)|201, 1),
  (-3000, NULL, 39, 'NVTX main', (1<<48)|(100<<24)|101, 0);
INSERT INTO NVTX_EVENTS (start, end, eventType, category, text, globalTid, domainId) VALUES
  (-2000, NULL, 33, 3, 'io', (1<<48)|(100<<24)|101, 1);
INSERT INTO NVTX_EVENTS (start, end, eventType, text, textId, globalTid, domainId, category, color, int64Value) VALUES
  (1000, 9000, 59, 'outer', NULL, (1<<48)|(100<<24)|101, 0, NULL, NULL, NULL),
  (2000, 3000, 59, NULL, 10, (1<<48)|(100<<24)|101, 1, 3, 4278255360, 42),
  (4000, 5000, 70, 'nvtxt range', NULL, (1<<48)|(100<<24)|101, 0, NULL, NULL, NULL),
  (8000, 9500, 59, 'crossing', NULL, (1<<48)|(100<<24)|101, 0, NULL, NULL, NULL),
  (9600, NULL, 59, 'never closed', NULL, (1<<48)|(100<<24)|101, 0, NULL, NULL, NULL);
INSERT INTO NVTX_EVENTS (start, end, eventType, rangeId, text, globalTid, endGlobalTid, domainId) VALUES
  (1500, 7000, 60, 1, 'async 1', (1<<48)|(100<<24)|101, (1<<48)|(100<<24)|102, 1),
  (6000, 8000, 60, 2, 'async 2', (1<<48)|(100<<24)|101, (1<<48)|(100<<24)|101, 1),
  (3000, 3500, 71, 3, 'nvtxt async', (1<<48)|(100<<24)|102, NULL, 0),
  (1000, 2000, 60, 1, 'async B', (1<<48)|(200<<24)|201, NULL, 1);
INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId, uint64Value, doubleValue, jsonText) VALUES
  (4500, NULL, 34, 'checkpoint', (1<<48)|(100<<24)|101, 1, -1, NULL, NULL),
  (4600, NULL, 34, 'loss', (1<<48)|(100<<24)|101, 0, NULL, 2.5, NULL),
  (4700, NULL, 34, 'config', (1<<48)|(100<<24)|101, 0, NULL, NULL, '{\"lr\":0.1}'),
  (4800, NULL, 99, 'future type', (1<<48)|(100<<24)|101, 0, NULL, NULL, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (2100, 2200, 0, (1<<48)|(100<<24)|101, 10, 1, 0, NULL),
  (2300, 2400, 0, (1<<48)|(100<<24)|101, 11, 1, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (3000, 4000, 0, 1, 7, 10, (1<<48)|(100<<24), 3, 4, 1, 1, 1, 1, 1, 1, 8),
  (4100, 6000, 0, 1, 7, 11, (1<<48)|(100<<24), 4, 4, 1, 1, 1, 1, 1, 1, 8);
";

/// CPU side: nsys 2022.2 backtrace rows (eventClass 67, callchain ids from 0 against chain ids
/// from 1), OS runtime calls with stacks (ids matching), CPU samples, scheduling, overhead.
const CPU: &str = "
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (990, 1510, 67, (1<<48)|(100<<24)|101, 5, 12, 0, 0),
  (1000, 1500, 0, (1<<48)|(100<<24)|101, 5, 12, 0, NULL),
  (1990, 2510, 67, (1<<48)|(100<<24)|101, 6, 17, 0, 1),
  (2000, 2500, 0, (1<<48)|(100<<24)|101, 6, 17, 0, NULL);
INSERT INTO CUDA_CALLCHAINS VALUES
  (1, 15, 16, 0), (1, 12, 13, 1), (1, 7, 14, 2),
  (2, 15, 16, 0), (2, 17, 13, 1), (2, 7, 14, 2);
INSERT INTO OSRT_API VALUES
  (3000, 3200, 27, (1<<48)|(100<<24)|101, 18, 64, 0, 1),
  (3300, 3400, 27, (1<<48)|(100<<24)|101, 20, 0, 0, 0),
  (3500, 3500, 31, (1<<48)|(100<<24)|101, 20, 0, NULL, 2);
INSERT INTO OSRT_CALLCHAINS VALUES (1, 18, 19, 0), (1, 7, 14, 1), (2, 20, 19, 0), (2, 7, 14, 1);
INSERT INTO COMPOSITE_EVENTS VALUES (1, 4000, 3, 1, (1<<48)|(100<<24)|101, 1),
  (2, 4100, 5, 1, (1<<48)|(100<<24)|102, 1);
INSERT INTO SAMPLING_CALLCHAINS VALUES (1, 21, 14, 0), (1, 7, 14, 1), (2, 7, 14, 0);
INSERT INTO SCHED_EVENTS VALUES (500, 3, 1, (1<<48)|(100<<24)|101), (5000, 3, 0, (1<<48)|(100<<24)|101);
INSERT INTO PROFILER_OVERHEAD VALUES (100, 400, (1<<48)|(100<<24)|101, 22, 0);
";

/// Rows a reader must survive: text where a timestamp or an id belongs, a missing thread id,
/// a kernel that ends before it starts, a range that never ends.
const BAD: &str = "
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (1000, 1500, 0, 'thread one', 1, 1, 0, NULL),
  ('soon', 1500, 0, (1<<48)|(100<<24)|101, 2, 1, 0, NULL),
  (1600, 1700, 0, NULL, 3, 1, 0, NULL),
  (1800, NULL, 0, (1<<48)|(100<<24)|101, 4, 2, 0, NULL),
  (-700, -600, 0, (1<<48)|(100<<24)|101, 5, 12, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (3000, 2500, 0, 1, 7, NULL, (1<<48)|(100<<24), 3, 4, 1, 1, 1, 1, 1, 1, 8),
  (3100, 3200, 'zero', 1, 7, NULL, (1<<48)|(100<<24), 3, 4, 1, 1, 1, 1, 1, 1, 8);
";

/// Writes a database from `DDL` plus `sql` and returns its path.
fn build(dir: &Path, name: &str, sql: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let mut conn = Connection::open(&path).unwrap();
    let tx = conn.transaction().unwrap();
    tx.execute_batch(DDL).unwrap();
    tx.execute_batch(NAMES).unwrap();
    for s in sql {
        tx.execute_batch(s).unwrap();
    }
    tx.commit().unwrap();
    path
}

/// The databases built by the tests, with the golden each one is compared with.
fn own_databases(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    vec![
        ("cuda_two_processes", build(dir, "cuda.sqlite", &[CUDA])),
        ("nvtx", build(dir, "nvtx.sqlite", &[NVTX])),
        ("cpu_side", build(dir, "cpu.sqlite", &[CPU])),
        ("bad_rows", build(dir, "bad.sqlite", &[BAD])),
    ]
}

fn info_json(path: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["info", "--json"];
    args.extend_from_slice(extra);
    args.push(path.to_str().unwrap());
    serde_json::from_slice(&run_ok(&args).stdout).unwrap()
}

fn diag(info: &Value, name: &str) -> u64 {
    info["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .map_or(0, |d| d["count"].as_u64().unwrap())
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// Imports through the library alone: events exactly as the importer pushes them.
fn import(path: &Path, opts: &tracex_nsys::ImportOptions) -> (Defs, Vec<Event>) {
    import_watched(path, opts, &Progress::new())
}

/// [`import`], advancing `progress`.
fn import_watched(
    path: &Path,
    opts: &tracex_nsys::ImportOptions,
    progress: &Progress,
) -> (Defs, Vec<Event>) {
    let mut defs = Defs::new();
    let mut diag = Diagnostics::default();
    let mut sink = MemSink::default();
    let mut ctx = ImportCtx::new(&mut defs, &mut diag, &mut sink, progress);
    tracex_nsys::import(path, opts, &mut ctx).unwrap();
    (defs, sink.events)
}

/// The importer declares `EventOrder::Sorted`: the CLI inserts no sorter, so the stream must
/// already be in the IR's total order (time; slices longest first; instants; flows; ...).
fn assert_sorted(events: &[Event], what: &str) {
    for (i, w) in events.windows(2).enumerate() {
        let (a, b) = (OrderKey::of(&w[0], 0), OrderKey::of(&w[1], 0));
        assert!(
            (a.ts, a.class, a.neg_dur) <= (b.ts, b.class, b.neg_dur),
            "{what}: event {} {:?} comes after {:?}",
            i + 1,
            w[1],
            w[0]
        );
    }
}

/// A progress bar's total, the rows of the tables the streams read, is counted only when a
/// bar shows it (counting reads every leaf page of those tables).
#[test]
fn rows_are_counted_for_progress_only_when_shown() {
    let dir = tempfile::tempdir().unwrap();
    for (name, path) in own_databases(dir.path()) {
        for shown in [false, true] {
            let progress = Progress::new();
            if shown {
                progress.set_shown();
            }
            import_watched(&path, &Default::default(), &progress);
            assert!(progress.done() > 0, "{name}: no row advanced the progress");
            match shown {
                // the rows of the tables read, of which filters may pass fewer
                true => assert!(progress.total() >= progress.done(), "{name}"),
                false => assert_eq!(progress.total(), 0, "{name}"),
            }
        }
    }
}

#[test]
fn goldens_of_databases_built_by_the_tests() {
    let dir = tempfile::tempdir().unwrap();
    for (name, path) in own_databases(dir.path()) {
        golden(&format!("nsys/{name}.dump"), &dump_with_diagnostics(&path));
    }
}

#[test]
fn own_databases_mean_what_they_should() {
    // The goldens are reviewed; these state the key facts independently of them.
    let dir = tempfile::tempdir().unwrap();
    let dbs = own_databases(dir.path());
    let d = dump_with_diagnostics(&dbs[0].1);
    // correlation id 1 exists in both processes: each call flows to its own process's kernel
    for flow in [
        "K5@1000/enclosing -> K2@2000/enclosing",
        "K6@1000/enclosing -> K4@1800/enclosing",
        "K6@3000/enclosing -> K1@3500/enclosing",
        "K5@1600/enclosing -> K2@5000/enclosing",
        "K5@2000/enclosing -> K0@2200/enclosing",
        // this kernel overlaps another on its stream and is on an overflow lane: the flow's
        // end moved there with it (nest::FlowBinder)
        "K5@2200/enclosing -> K3@2210/enclosing",
    ] {
        assert!(d.contains(flow), "missing flow {flow} in\n{d}");
    }
    assert_eq!(d.matches("\nflow ").count(), 6, "{d}");
    assert!(d.contains("diag nsys_launch_not_in_capture count=2"), "{d}");
    for fact in [
        "name=\"GPU 0: NVIDIA H100 80GB HBM3\"",
        "process P3 host pid=200 name=\"trainer\"",
        "name=\"stream 7 pid 100\"",
        "name=\"stream 14 pid 200\"",
        "slice ts=1000 dur=500 name=\"cudaLaunchKernel\" cat=\"cuda_runtime\" args={\"correlation_id\":1, \"return_value\":0, \"api_version\":7000}",
        "slice ts=3000 dur=100 name=\"cuLaunchKernel\" cat=\"cuda_driver\"",
        "name=\"gemm\" cat=\"kernel\" args={\"correlation_id\":1, \"context\":1, \"demangled_name\":\"void gemm<float>(float*, int)\", \"grid\":[128,1,1], \"block\":[256,1,1], \"registers_per_thread\":32",
        "name=\"Memcpy HtoD\" cat=\"gpu_memcpy\"",
        "\"bandwidth_gb_per_s\":1048.576",
        "name=\"Stream sync\" cat=\"cuda_sync\"",
        "name=\"Memset\" cat=\"gpu_memset\"",
        "overflow=1",
        "clock origin_unix_ns=1700000000000000000",
        "thread T0 P2 tid=101 name=\"main\"",
    ] {
        assert!(d.contains(fact), "missing {fact:?} in\n{d}");
    }
    // a thread named in a process without events is not listed; one in a process with events is
    assert!(!d.contains("unused thread"), "{d}");
    assert!(d.contains("tid=103 name=\"worker\""), "{d}");

    let d = dump_with_diagnostics(&dbs[1].1);
    for fact in [
        "name=\"NVTX main\"",
        "async P1 name=\"NVTX Domain A\"",
        "async P2 name=\"NVTX Domain B\"",
        "slice ts=2000 dur=1000 name=\"registered inner\" cat=\"nvtx\" args={\"domain\":\"Domain A\", \"category\":\"io\", \"color\":\"#00ff00\", \"payload\":42}",
        "name=\"nvtxt range\" cat=\"nvtx\"",
        "slice ts=1500 dur=5500 name=\"async 1\" cat=\"nvtx\" args={\"domain\":\"Domain A\", \"range_id\":1, \"end_tid\":102}",
        "instant ts=4500 name=\"checkpoint\" cat=\"nvtx\" args={\"domain\":\"Domain A\", \"payload\":18446744073709551615}",
        "instant ts=4600 name=\"loss\" cat=\"nvtx\" args={\"payload\":2.5}",
        "instant ts=4700 name=\"config\" cat=\"nvtx\" args={\"payload\":\"{\\\"lr\\\":0.1}\"}",
        "slice ts=9600 dur=open name=\"never closed\"",
        "slice ts=3000 dur=3000 name=\"outer\" cat=\"nvtx_kernel\"",
        "slice ts=3000 dur=3000 name=\"registered inner\" cat=\"nvtx_kernel\"",
        "\"nvtx\":[\"outer\",\"registered inner\"]",
        "diag nsys_nvtx_unknown_event_type count=1",
        "diag nsys_nvtx_definition_row count=4",
        "diag slice_never_ended count=1",
        "diag async_overlap_lane count=1",
        "diag slice_partial_overlap count=1",
    ] {
        assert!(d.contains(fact), "missing {fact:?} in\n{d}");
    }

    let d = dump_with_diagnostics(&dbs[2].1);
    for fact in [
        // chain ids from 0 in callchainId, from 1 in CUDA_CALLCHAINS: the call's own name is in its stack
        "slice ts=1000 dur=500 name=\"cudaMalloc\" cat=\"cuda_runtime\" stack=[\"main\"@\"app\"; \"cudaMalloc\"@\"libcudart.so\"; \"0x7f00dead\"@\"libcuda.so\"] args={\"correlation_id\":5, \"return_value\":0}",
        "slice ts=2000 dur=500 name=\"cudaFree\" cat=\"cuda_runtime\" stack=[\"main\"@\"app\"; \"cudaFree\"@\"libcudart.so\"; \"0x7f00dead\"@\"libcuda.so\"] args={\"correlation_id\":6, \"return_value\":0}",
        // OS runtime ids match directly; 0 means no backtrace
        "slice ts=3000 dur=200 name=\"write\" cat=\"osrt\" stack=[\"main\"@\"app\"; \"write\"@\"libc.so.6\"] args={\"return_value\":64, \"nesting_level\":0, \"event_class\":\"OSRT runtime\"}",
        "slice ts=3300 dur=100 name=\"flush\" cat=\"osrt\" args={\"return_value\":0, \"nesting_level\":0, \"event_class\":\"OSRT runtime\"}\n",
        "sample ts=4000 weight=1 cpu=3 stack=[\"main\"@\"app\"; \"sample_leaf\"@\"app\"]",
        "instant ts=500 name=\"sched in\" cat=\"sched\" args={\"cpu\":3}",
        "instant ts=5000 name=\"sched out\"",
        "name=\"CUDA profiling initialization\" cat=\"nsys_overhead\"",
        "diag nsys_cuda_backtrace_row count=2",
        "diag nsys_sample_fields_dropped count=2",
    ] {
        assert!(d.contains(fact), "missing {fact:?} in\n{d}");
    }
    assert_eq!(d.matches("cat=\"cuda_runtime\"").count(), 2, "{d}");

    let d = dump_with_diagnostics(&dbs[3].1);
    for fact in [
        "diag nsys_bad_value count=3 first=table CUPTI_ACTIVITY_KIND_RUNTIME, rowid 1 detail=\"column globalTid holds the text \\\"thread one\\\" where an integer or NULL belongs\"",
        "diag nsys_missing_global_id count=1 first=table CUPTI_ACTIVITY_KIND_RUNTIME, rowid 3",
        "slice ts=1800 dur=open name=\"cudaMemcpyAsync\"",
        "slice ts=-700 dur=100 name=\"cudaMalloc\"",
        "slice ts=3000 dur=0 name=\"gemm\" cat=\"kernel\" args={\"context\":1, \"demangled_name\":\"void gemm<float>(float*, int)\", \"grid\":[1,1,1], \"block\":[1,1,1], \"registers_per_thread\":8, \"tracex_original_dur_ns\":-500}",
        "diag slice_negative_duration count=1",
    ] {
        assert!(d.contains(fact), "missing {fact:?} in\n{d}");
    }
    // the rows with text in start, globalTid and deviceId are gone, the others kept
    assert!(
        !d.contains("ts=3100") && !d.contains("dur=500 name=\"cudaLaunchKernel\""),
        "{d}"
    );
}

#[test]
fn events_come_in_the_total_order_and_every_flow_is_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs: Vec<PathBuf> = own_databases(dir.path())
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    inputs.extend(corpus_files("nsys"));
    for path in &inputs {
        let (_, events) = import(path, &Default::default());
        assert_sorted(&events, &path.display().to_string());
        // E2: every flow has exactly one start and one end, the end not before the start
        let mut flows: std::collections::HashMap<u64, Vec<(tracex_ir::FlowRole, i64)>> =
            Default::default();
        for e in &events {
            if let Event::Flow(f) = e {
                flows.entry(f.id.0).or_default().push((f.role, f.ts));
            }
        }
        for (id, pts) in flows {
            assert_eq!(pts.len(), 2, "{}: flow {id} has {pts:?}", path.display());
            assert_eq!(pts[0].0, tracex_ir::FlowRole::Start);
            assert_eq!(pts[1].0, tracex_ir::FlowRole::End);
            assert!(pts[0].1 < pts[1].1, "{}: flow {id} {pts:?}", path.display());
        }
    }
    eprintln!("order: {} inputs checked", inputs.len());
}

/// Row counts of a real export, computed with SQL independently of the importer.
struct TableCounts {
    conn: Connection,
}

impl TableCounts {
    fn open(path: &Path) -> TableCounts {
        let uri = format!("file:{}?mode=ro&immutable=1", path.display());
        let conn = Connection::open_with_flags(
            uri,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
        )
        .unwrap();
        TableCounts { conn }
    }

    fn has(&self, table: &str) -> bool {
        self.conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get::<_, i64>(0),
            )
            .unwrap()
            > 0
    }

    /// `SELECT count(*) FROM table WHERE filter`, 0 when the table is absent.
    fn rows(&self, table: &str, filter: &str) -> u64 {
        if !self.has(table) {
            return 0;
        }
        self.conn
            .query_row(
                &format!("SELECT count(*) FROM {table} WHERE {filter}"),
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap() as u64
    }

    /// GPU rows of `table` whose launching API call (same process, same correlation id,
    /// runtime or driver class) starts before them: the flows the importer must make.
    fn launched(&self, table: &str) -> u64 {
        if !self.has(table) || !self.has("CUPTI_ACTIVITY_KIND_RUNTIME") {
            return 0;
        }
        self.conn
            .query_row(
                &format!(
                    "SELECT count(*) FROM {table} g WHERE EXISTS (SELECT 1 FROM \
                     CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = g.correlationId \
                     AND r.globalTid / 16777216 = g.globalPid / 16777216 \
                     AND r.eventClass IN (0, 1) AND r.start < g.start)"
                ),
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap() as u64
    }
}

/// (table, SQL filter, event kind, category) of tables whose rows become one event each.
const ONE_TO_ONE: &[(&str, &str, &str, &str)] = &[
    ("CUPTI_ACTIVITY_KIND_KERNEL", "1", "slice", "kernel"),
    ("CUPTI_ACTIVITY_KIND_MEMCPY", "1", "slice", "gpu_memcpy"),
    ("CUPTI_ACTIVITY_KIND_MEMSET", "1", "slice", "gpu_memset"),
    (
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
        "1",
        "slice",
        "cuda_sync",
    ),
    ("OSRT_API", "1", "slice", "osrt"),
    (
        "NVTX_EVENTS",
        "eventType IN (59, 60, 70, 71)",
        "slice",
        "nvtx",
    ),
    ("NVTX_EVENTS", "eventType = 34", "instant", "nvtx"),
    ("COMPOSITE_EVENTS", "1", "event", "sample"),
    ("SCHED_EVENTS", "1", "instant", "sched"),
    ("PROFILER_OVERHEAD", "1", "slice", "nsys_overhead"),
    (
        "CUPTI_ACTIVITY_KIND_OVERHEAD",
        "1",
        "slice",
        "cupti_overhead",
    ),
    ("DIAGNOSTIC_EVENT", "1", "instant", "nsys_diagnostic"),
];

#[test]
fn fidelity_sql_row_counts_match_event_counts_on_every_real_export() {
    let files = corpus_files("nsys");
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let sql = TableCounts::open(f);
        let info = info_json(f, &[]);
        let slices = &info["slices_by_cat"];
        let instants = &info["instants_by_cat"];
        let all = "1";
        let check = |what: &str, expected: u64, got: u64| {
            assert_eq!(
                got, expected,
                "{name}: {what}: SQL says {expected}, tracex {got}"
            );
        };
        check(
            "CUDA API rows",
            sql.rows("CUPTI_ACTIVITY_KIND_RUNTIME", all),
            count(&slices["cuda_runtime"])
                + count(&slices["cuda_driver"])
                + diag(&info, "nsys_cuda_backtrace_row"),
        );
        // tables whose rows map one to one onto events of one category
        for (table, filter, kind, cat) in ONE_TO_ONE {
            let got = match *kind {
                "slice" => count(&slices[cat]),
                "instant" => count(&instants[cat]),
                _ => count(&info["events"][cat]),
            };
            check(&format!("{table} {filter}"), sql.rows(table, filter), got);
        }
        check(
            "CUDA graphs",
            sql.rows("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", all) + sql.rows("CUDA_GRAPH_EVENTS", all),
            count(&slices["cuda_graph"]),
        );
        check(
            "CUDA events",
            sql.rows("CUPTI_ACTIVITY_KIND_CUDA_EVENT", all),
            count(&instants["cuda_event"]) + diag(&info, "nsys_cuda_event_without_time"),
        );
        check(
            "NVTX definitions",
            sql.rows("NVTX_EVENTS", "eventType IN (33, 39, 75, 76)"),
            diag(&info, "nsys_nvtx_definition_row"),
        );
        let gpu_tables = [
            "CUPTI_ACTIVITY_KIND_KERNEL",
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            "CUPTI_ACTIVITY_KIND_MEMSET",
            "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
            "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
        ];
        let launched: u64 = gpu_tables.iter().map(|t| sql.launched(t)).sum();
        let gpu_rows: u64 = gpu_tables.iter().map(|t| sql.rows(t, all)).sum();
        check(
            "flows (process, correlationId)",
            launched,
            count(&info["flows"]),
        );
        check(
            "GPU rows without a launch",
            gpu_rows - launched,
            diag(&info, "nsys_launch_not_in_capture"),
        );
        assert_eq!(diag(&info, "nsys_bad_value"), 0, "{name}");
        assert_eq!(diag(&info, "nsys_missing_global_id"), 0, "{name}");
        assert_eq!(diag(&info, "nsys_unknown_string_id"), 0, "{name}");
    }
    eprintln!("fidelity: {} real nsys exports checked", files.len());
    if corpus().is_some() {
        assert_eq!(files.len(), 10, "expected the 10 nsys fixtures");
    }
}

/// The first row of a table by time, as the test reads it with SQL.
fn first_row(sql: &TableCounts, query: &str) -> Option<(i64, i64, String)> {
    sql.conn
        .query_row(query, [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .ok()
}

#[test]
fn fidelity_spot_checks_of_exact_times_and_names() {
    let files = corpus_files("nsys");
    let mut checked = 0;
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let sql = TableCounts::open(f);
        let d = dump(f);
        let queries = [
            ("CUPTI_ACTIVITY_KIND_KERNEL", "SELECT k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName ORDER BY k.start, k.end DESC LIMIT 1"),
            ("CUPTI_ACTIVITY_KIND_RUNTIME", "SELECT r.start, r.end, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE r.eventClass IN (0, 1) ORDER BY r.end DESC LIMIT 1"),
            ("OSRT_API", "SELECT o.start, o.end, s.value FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId ORDER BY o.end - o.start DESC LIMIT 1"),
            ("NVTX_EVENTS", "SELECT n.start, n.end, coalesce(n.text, s.value) FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType = 59 ORDER BY n.start DESC LIMIT 1"),
        ];
        for (table, q) in queries {
            if !sql.has(table) {
                continue;
            }
            let Some((start, end, text)) = first_row(&sql, q) else {
                continue;
            };
            let (base, _) = split_version(&text);
            let mut needle = format!("slice ts={start} dur={} name=", end - start);
            tracex_ir::dump::quote(&mut needle, base);
            assert!(
                d.contains(&needle),
                "{name}: {table}: no {needle:?} in the dump"
            );
            checked += 1;
        }
    }
    eprintln!(
        "spot checks: {checked} exact slices in {} real exports",
        files.len()
    );
}

/// `cudaLaunchKernel_v7000` → `cudaLaunchKernel`, as tracex names API calls.
fn split_version(name: &str) -> (&str, Option<&str>) {
    match name.rfind("_v") {
        Some(i) if name[i + 2..].bytes().all(|b| b.is_ascii_digit()) && i + 2 < name.len() => {
            (&name[..i], Some(&name[i + 2..]))
        }
        _ => (name, None),
    }
}

#[test]
fn real_exports_convert_to_valid_chrome_json() {
    let dir = tempfile::tempdir().unwrap();
    let files = corpus_files("nsys");
    for (i, f) in files.iter().enumerate() {
        let out = dir.path().join(format!("out{i}.json"));
        run_ok(&["convert", f.to_str().unwrap(), out.to_str().unwrap()]);
        crate::chrome::check_output(&out);
        let text = std::fs::read_to_string(&out).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        // every GPU is a process of its own with a numeric pid, named "GPU n: ..." or "GPU n"
        let names: Vec<&str> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
            .filter_map(|e| e["args"]["name"].as_str())
            .collect();
        let sql = TableCounts::open(f);
        if sql.rows("CUPTI_ACTIVITY_KIND_KERNEL", "1") > 0 {
            assert!(
                names.iter().any(|n| n.starts_with("GPU ")),
                "{}: {names:?}",
                f.display()
            );
        }
    }
    eprintln!("chrome output: {} real exports checked", files.len());
}

#[test]
fn multi_gpu_multi_process_export_keeps_every_device_and_pairs_within_processes() {
    let Some(f) = corpus_files("nsys")
        .into_iter()
        .find(|p| p.to_string_lossy().contains("h100_2gpu"))
    else {
        return;
    };
    let d = dump(&f);
    assert!(d.contains("device=0 name=\"GPU 0\""), "GPU 0 missing");
    assert!(d.contains("device=1 name=\"GPU 1\""), "GPU 1 missing");
    // two host processes, each with its own streams
    assert_eq!(d.matches(" host pid=").count(), 2);
    // every flow goes from a thread of one process to a stream whose work that process launched
    let (defs, events) = import(&f, &Default::default());
    let mut starts = std::collections::HashMap::new();
    for e in &events {
        if let Event::Flow(fl) = e {
            let t = defs.track(fl.track);
            match fl.role {
                tracex_ir::FlowRole::Start => {
                    let th = defs.track_thread(fl.track).unwrap();
                    starts.insert(fl.id, defs.process(defs.thread(th).process).os_pid);
                }
                _ => {
                    let name = defs.str(t.name.unwrap()).to_string();
                    let pid = starts[&fl.id].unwrap();
                    // streams of a device shared by two processes carry the pid in their name
                    if name.contains("pid") {
                        assert!(name.ends_with(&format!("pid {pid}")), "{name} vs {pid}");
                    }
                }
            }
        }
    }
    assert!(!starts.is_empty());
}

#[test]
fn cuda_api_slices_carry_stacks_and_flows_for_gpu_time_by_call_stack() {
    // The folded exporter builds "GPU time by CPU call stack" from API slices with stacks on
    // thread tracks and their flows to kernels.
    let Some(f) = corpus_files("nsys")
        .into_iter()
        .find(|p| p.to_string_lossy().contains("saxpy"))
    else {
        return;
    };
    let (defs, events) = import(&f, &Default::default());
    let launches: Vec<&tracex_ir::Slice> = events
        .iter()
        .filter_map(|e| match e {
            Event::Slice(s) if defs.str(s.name) == "cudaLaunchKernel" => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(launches.len(), 5);
    for s in &launches {
        let stack = defs.stack_names(s.stack.expect("a backtrace"));
        assert_eq!(stack.first(), Some(&"_start"), "{stack:?}");
        assert!(stack.contains(&"cudaLaunchKernel"), "{stack:?}");
        assert!(defs.track_thread(s.track).is_some());
        assert!(events.iter().any(|e| matches!(e, Event::Flow(f)
            if f.track == s.track && f.ts == s.ts && f.role == tracex_ir::FlowRole::Start)));
    }
}

#[test]
fn input_is_never_modified_and_no_file_appears_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let src = build(dir.path(), "in.sqlite", &[CUDA, NVTX]);
    let before = std::fs::read(&src).unwrap();
    let mtime = std::fs::metadata(&src).unwrap().modified().unwrap();
    let out = dir.path().join("sub");
    std::fs::create_dir(&out).unwrap();
    run_ok(&[
        "convert",
        src.to_str().unwrap(),
        out.join("o.json").to_str().unwrap(),
    ]);
    run_ok(&["info", src.to_str().unwrap()]);
    assert_eq!(std::fs::read(&src).unwrap(), before);
    assert_eq!(std::fs::metadata(&src).unwrap().modified().unwrap(), mtime);
    let beside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(beside.len(), 2, "files beside the input: {beside:?}");
}

#[test]
fn stdin_and_gzip_inputs_are_spooled() {
    let dir = tempfile::tempdir().unwrap();
    let src = build(dir.path(), "in.sqlite", &[CUDA]);
    let expected = dump(&src);
    let gz = dir.path().join("in.sqlite.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut e, &std::fs::read(&src).unwrap()).unwrap();
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    assert_eq!(dump(&gz), expected);
    let out = tracex()
        .args(["dump", "--no-diagnostics", "-"])
        .stdin(std::fs::File::open(&src).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}

#[test]
fn sniffing_tells_nsys_from_other_sqlite_files() {
    let dir = tempfile::tempdir().unwrap();
    let nsys = build(dir.path(), "a.db", &[CUDA]);
    let info = info_json(&nsys, &[]);
    assert_eq!(info["format"], "nsys");
    assert_eq!(info["sniffers"][0]["answer"], "certain");
    let other = dir.path().join("other.sqlite");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    let err = run_err(&["info", other.to_str().unwrap()]);
    assert!(err.contains("not an Nsight Systems export"), "{err}");
}

#[test]
fn bad_inputs_fail_with_a_clear_error_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let o = out.to_str().unwrap();
    // not SQLite at all, forced
    let text = dir.path().join("notes.sqlite");
    std::fs::write(&text, "just some text, not a database\n").unwrap();
    let err = run_err(&["convert", "--from", "nsys", text.to_str().unwrap(), o]);
    assert!(err.contains("not an SQLite database"), "{err}");
    // SQLite header but cut short: the damage is reported
    let src = build(dir.path(), "full.sqlite", &[CUDA, NVTX]);
    let bytes = std::fs::read(&src).unwrap();
    let cut = dir.path().join("cut.sqlite");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let err = run_err(&["convert", cut.to_str().unwrap(), o]);
    assert!(
        err.contains("damaged or truncated") || err.contains("not an SQLite database"),
        "{err}"
    );
    // a page of garbage in the middle of a table
    let mut bad = bytes.clone();
    let page = 4096;
    for b in &mut bad[3 * page..4 * page] {
        *b = 0xA5;
    }
    let garbled = dir.path().join("garbled.sqlite");
    std::fs::write(&garbled, &bad).unwrap();
    let out2 = tracex()
        .args(["convert", garbled.to_str().unwrap(), o])
        .output()
        .unwrap();
    // either a located error or (if the page held nothing read) a conversion; never a panic
    let stderr = String::from_utf8_lossy(&out2.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    if !out2.status.success() {
        assert_eq!(out2.status.code(), Some(1));
        assert!(!out.exists());
    }
    let _ = std::fs::remove_file(&out);
    // --strict refuses the rows that had to be skipped
    let badrows = build(dir.path(), "bad.sqlite", &[BAD]);
    let err = run_err(&["convert", "--strict", badrows.to_str().unwrap(), o]);
    assert!(err.contains("nsys_bad_value"), "{err}");
    assert!(!out.exists());
}

#[test]
fn activity_filter_prefix_and_colours() {
    let dir = tempfile::tempdir().unwrap();
    let src = build(dir.path(), "in.sqlite", &[CUDA, NVTX]);
    let s = src.to_str().unwrap();
    let convert = |name: &str, extra: &[&str]| -> Vec<Value> {
        let out = dir.path().join(name);
        let mut args = vec!["convert"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&[s, out.to_str().unwrap()]);
        run_ok(&args);
        let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        doc["traceEvents"].as_array().unwrap().clone()
    };
    let cats = |evs: &[Value]| -> std::collections::BTreeSet<String> {
        evs.iter()
            .filter_map(|e| e["cat"].as_str().map(String::from))
            .collect()
    };
    let only_kernels = convert("k.json", &["--activity", "kernel"]);
    assert_eq!(cats(&only_kernels), ["kernel".to_string()].into());
    let api_and_kernels = convert("ak.json", &["--activity", "kernel,cuda-api"]);
    assert!(
        api_and_kernels.iter().any(|e| e["ph"] == "s"),
        "flows need both sides"
    );
    // registered (textId) names match a prefix too; a quote in it is data, not SQL
    let pref = convert(
        "p.json",
        &[
            "--activity",
            "nvtx",
            "--nvtx-prefix",
            "registered",
            "--nvtx-prefix",
            "o'",
        ],
    );
    let names: std::collections::BTreeSet<&str> = pref
        .iter()
        .filter(|e| e["ph"] == "X")
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, ["registered inner"].into());
    let colored = convert(
        "c.json",
        &[
            "--activity",
            "nvtx",
            "--nvtx-color-scheme",
            r#"{"^reg": "good", "o.t": "terrible"}"#,
        ],
    );
    let cname = |n: &str| {
        colored
            .iter()
            .find(|e| e["name"] == n && e["ph"] == "X")
            .and_then(|e| e["cname"].as_str())
            .map(String::from)
    };
    assert_eq!(cname("registered inner").as_deref(), Some("good"));
    assert_eq!(cname("outer").as_deref(), Some("terrible"));
    assert_eq!(cname("nvtxt range"), None);
    // an unknown activity is an error that lists the known ones
    let err = run_err(&["convert", "--activity", "kernels", s, "x.json"]);
    assert!(
        err.contains("one of") && err.contains("nvtx-kernel"),
        "{err}"
    );
    // the generic filter's group words select nsys tables too: counters = metrics + memory
    let counters = convert("cn.json", &["--activity", "counters"]);
    assert!(
        counters.iter().all(|e| e["ph"] == "C" || e["ph"] == "M"),
        "only counters"
    );
    // bad option values are usage errors
    for bad in [
        vec!["--nvtx-color-scheme", r#"{"x": "pink"}"#],
        vec!["--nvtx-color-scheme", "not json"],
    ] {
        let mut args = vec!["convert"];
        args.extend_from_slice(&bad);
        args.extend_from_slice(&[s, "x.json"]);
        let o = tracex().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
    }
}

/// NVIDIA's published DDL (`../design/nsys-schema.sql` beside the corpus), when present.
fn nvidia_ddl() -> Option<String> {
    let path = corpus()?.join("../design/nsys-schema.sql");
    match std::fs::read_to_string(&path) {
        Ok(s) => Some(s),
        Err(_) => {
            eprintln!("note: no {}; DDL tests check nothing", path.display());
            None
        }
    }
}

#[test]
fn tables_no_fixture_has_with_nvidias_ddl() {
    let Some(ddl) = nvidia_ddl() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("schema.sqlite");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(&ddl).unwrap();
    conn.execute_batch(
        "
        INSERT INTO StringIds VALUES (1, 'MPI_Send'), (2, 'MPI_Allreduce'), (3, 'cublasSgemm_v2'),
          (4, 'cudnnConvolutionForward'), (5, 'acc_compute_construct'), (6, 'main.c'),
          (7, 'omp_parallel'), (8, 'MPI_Wait'), (9, 'ucp_tag_send_nb'), (10, 'kernel_a'),
          (11, 'main'), (12, 'app');
        INSERT INTO ThreadNames VALUES (11, 0, (1<<48)|(7<<24)|7);
        INSERT INTO MPI_RANKS VALUES ((1<<48)|(7<<24)|7, 3);
        INSERT INTO MPI_P2P_EVENTS VALUES (100, 200, (1<<48)|(7<<24)|7, 1, 91, 5, 1, 4096, 17);
        INSERT INTO MPI_COLLECTIVES_EVENTS VALUES (300, 900, (1<<48)|(7<<24)|7, 2, 91, 0, 8, 8, NULL);
        INSERT INTO MPI_START_WAIT_EVENTS VALUES (950, NULL, (1<<48)|(7<<24)|7, 8, 17);
        INSERT INTO CUBLAS_EVENTS VALUES (1000, 1100, 29, (1<<48)|(7<<24)|7, 3);
        INSERT INTO CUDNN_EVENTS VALUES (1200, 1300, 28, (1<<48)|(7<<24)|7, 4);
        INSERT INTO UCP_EVENTS VALUES (1350, 1360, (1<<48)|(7<<24)|7, 9);
        INSERT INTO CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH VALUES (1400, 1500, 5,
          (1<<48)|(7<<24)|7, 2, 4, 42, 0, 1, 7, 6, 5, 64, 4, 32, 10);
        INSERT INTO OPENMP_EVENT_KIND_PARALLEL VALUES (1600, 1700, 0, (1<<48)|(7<<24)|7, NULL, 7, 1, 3, 1);
        INSERT INTO TARGET_INFO_GPU_METRICS VALUES (0, 1, 'GA100', 5, 'SM Active [Throughput %]'),
          (0, 1, 'GA100', 6, 'DRAM Read Bandwidth [Throughput %]'),
          (1, 1, 'GA100', 5, 'SM Active [Throughput %]');
        INSERT INTO GPU_METRICS VALUES (1000, 0, 5, 40), (1000, 0, 6, 12), (2000, 0, 5, 80),
          (2000, 1, 5, 10), (3000, 0, 77, 1);
        INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address,
          pc, bytes, memKind, memoryOperationType) VALUES
          (500, (1<<48)|(7<<24), 0, 1, 4096, 0, 1000000, 2, 0),
          (600, (1<<48)|(7<<24), 0, 1, 8192, 0, 500000, 2, 0),
          (700, (1<<48)|(7<<24), 0, 1, 4096, 0, 1000000, 2, 1);
        INSERT INTO CUDA_UM_CPU_PAGE_FAULT_EVENTS VALUES (800, (1<<48)|(7<<24), 65536, 1234, 11, 12, 0);
        INSERT INTO CUDA_UM_GPU_PAGE_FAULT_EVENTS VALUES (850, 870, (1<<48)|(7<<24), 0, 65536, 3, 1);
        INSERT INTO DIAGNOSTIC_EVENT VALUES (-46000000, 1, 2, 2, 'Some CPU samples were lost.
Increase the buffer.', (1<<48));
        INSERT INTO NVTX_EVENTS (start, end, eventType, category, text, globalTid, domainId) VALUES
          (0, NULL, 33, 4, 'compute', (1<<48)|(7<<24)|7, 0);
        INSERT INTO NVTX_EVENTS (start, end, eventType, category, text, globalTid, endGlobalTid, rangeId, domainId, uint32Value) VALUES
          (100, 1900, 60, 4, 'epoch', (1<<48)|(7<<24)|7, (1<<48)|(7<<24)|7, 1, 0, 7),
          (150, NULL, 34, 4, 'tick', (1<<48)|(7<<24)|7, NULL, NULL, 0, NULL);
        ",
    )
    .unwrap();
    drop(conn);
    let d = dump_with_diagnostics(&path);
    for fact in [
        "process P2 host pid=7 name=\"main\"",
        "meta \"mpi_rank\"=3",
        "slice ts=100 dur=100 name=\"MPI_Send\" cat=\"mpi\" args={\"communicator\":91, \"tag\":5, \"remote_rank\":1, \"size_bytes\":4096, \"request\":17}",
        "slice ts=300 dur=600 name=\"MPI_Allreduce\" cat=\"mpi\" args={\"communicator\":91, \"root_rank\":0, \"size_bytes\":8, \"recv_size_bytes\":8}",
        "slice ts=950 dur=open name=\"MPI_Wait\" cat=\"mpi\"",
        "name=\"cublasSgemm_v2\" cat=\"cublas\" args={\"event_class\":\"cuBLAS\"}",
        "name=\"cudnnConvolutionForward\" cat=\"cudnn\"",
        "name=\"ucp_tag_send_nb\" cat=\"ucx\"",
        "name=\"acc_compute_construct\" cat=\"openacc\" args={\"event_kind\":2, \"line\":42, \"source_file\":\"main.c\", \"function\":\"acc_compute_construct\", \"kernel\":\"kernel_a\", \"device\":0, \"context\":1, \"stream\":7",
        "name=\"omp_parallel\" cat=\"openmp\" args={\"event_class\":\"CUDA runtime\", \"eventKind\":1, \"parallelId\":3, \"parentTaskId\":1}",
        "name=\"SM Active [Throughput %]\" cat=\"gpu_metrics\"",
        "name=\"CUDA memory allocated\" series=\"pid 7\" unit=\"bytes\" cat=\"cuda_memory\"",
        "value ts=500 value=1000000",
        "value ts=600 value=1500000",
        "value ts=700 value=500000",
        "instant ts=800 name=\"CPU page fault\" cat=\"um_page_fault\" args={\"address\":65536, \"fault_pc\":1234, \"function\":\"main\", \"module\":\"app\", \"unresolved_fault_pc\":0}",
        "instant ts=850 name=\"GPU page fault\" cat=\"um_page_fault\" args={\"end_ns\":870, \"address\":65536, \"faults\":3, \"access_type\":\"Read\"}",
        "instant ts=-46000000 name=\"Some CPU samples were lost.\" cat=\"nsys_diagnostic\" args={\"severity\":\"Warning\", \"source\":2, \"timestamp_type\":1, \"text\":\"Some CPU samples were lost.\\nIncrease the buffer.\"}",
        "slice ts=100 dur=1800 name=\"epoch\" cat=\"nvtx\" args={\"category\":\"compute\", \"range_id\":1, \"payload\":7}",
        "instant ts=150 name=\"tick\" cat=\"nvtx\" args={\"category\":\"compute\"}",
        "diag nsys_unknown_gpu_metric count=1",
    ] {
        assert!(d.contains(fact), "missing {fact:?} in\n{d}");
    }
    // one series per (GPU, metric): GPU 0 has two metrics, GPU 1 one, plus the unknown metric
    assert_eq!(d.matches("cat=\"gpu_metrics\"").count(), 4, "{d}");
    assert_eq!(d.matches(" value ts=").count(), 8, "{d}");
}

#[test]
fn newest_fixture_ddl_with_nvtx_payload_columns() {
    // The DDL of the newest real export (nsys 2026.2), with rows its capture did not have.
    let Some(f) = corpus_files("nsys")
        .into_iter()
        .find(|p| p.to_string_lossy().contains("h100_2gpu"))
    else {
        return;
    };
    let src = TableCounts::open(&f);
    let ddl: Vec<String> = src
        .conn
        .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newest.sqlite");
    let conn = Connection::open(&path).unwrap();
    for stmt in &ddl {
        conn.execute_batch(stmt).unwrap();
    }
    conn.execute_batch(
        "
        INSERT INTO StringIds VALUES (1, 'ncclAllReduce'), (2, 'NCCL');
        INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES
          (-10, NULL, 75, 'NCCL', (1<<48)|(9<<24)|9, 5);
        INSERT INTO NVTX_EVENTS (start, end, eventType, textId, globalTid, endGlobalTid, domainId, jsonText, binaryData) VALUES
          (100, 400, 60, 1, (1<<48)|(9<<24)|9, (1<<48)|(9<<24)|10, 5, '{\"size\":1024}', NULL),
          (200, 300, 59, 1, (1<<48)|(9<<24)|9, NULL, 5, NULL, NULL),
          (250, NULL, 34, 1, (1<<48)|(9<<24)|9, NULL, 5, NULL, 'blob');
        ",
    )
    .unwrap();
    drop(conn);
    let d = dump_with_diagnostics(&path);
    for fact in [
        "async P0 name=\"NVTX NCCL\"",
        "slice ts=100 dur=300 name=\"ncclAllReduce\" cat=\"nvtx\" args={\"domain\":\"NCCL\", \"end_tid\":10, \"payload\":\"{\\\"size\\\":1024}\"}",
        "slice ts=200 dur=100 name=\"ncclAllReduce\" cat=\"nvtx\" args={\"domain\":\"NCCL\"}",
        "instant ts=250 name=\"ncclAllReduce\" cat=\"nvtx\" args={\"domain\":\"NCCL\", \"payload\":\"blob\"}",
    ] {
        assert!(d.contains(fact), "missing {fact:?} in\n{d}");
    }
}

#[test]
fn registry_lists_nsys_and_its_diagnostics() {
    let text = String::from_utf8(run_ok(&["formats"]).stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("nsys"))
        .expect("nsys listed");
    assert!(line.contains(".sqlite") && line.contains("yes"), "{line}");
    let diags = String::from_utf8(run_ok(&["formats", "--diagnostics"]).stdout).unwrap();
    for k in tracex_nsys::DIAGNOSTICS {
        assert!(diags.contains(k.name), "{} not listed", k.name);
    }
    let help = String::from_utf8(run_ok(&["convert", "--help"]).stdout).unwrap();
    for opt in [
        "Nsight Systems",
        "--activity",
        "--nvtx-prefix",
        "--nvtx-color-scheme",
    ] {
        assert!(help.contains(opt), "convert --help lacks {opt}");
    }
}

#[test]
fn nvtx_projections_stream_in_time_order_over_many_ranges() {
    // Enough ranges for many hand-overs from the projection pass to the merge; on thread 101 an
    // outer range open over everything holds later projections back, thread 102 is flat.
    let dir = tempfile::tempdir().unwrap();
    let mut sql = String::from(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES \
         (0, 100000000, 59, 'outer', (1<<48)|(100<<24)|101);",
    );
    let mut corr = 1000;
    for i in 0..3000i64 {
        for (tid, offset) in [(101, 0), (102, 7)] {
            let start = 1000 + i * 1000 + offset;
            sql.push_str(&format!(
                "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES \
                 ({start}, {}, 59, 'r{tid}', (1<<48)|(100<<24)|{tid});",
                start + 600
            ));
            for k in 0..2 {
                let t = start + 100 + k * 200;
                sql.push_str(&format!(
                    "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({t}, {}, 0, (1<<48)|(100<<24)|{tid}, {corr}, 1, 0, NULL);
                     INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({}, {}, 0, 1, {tid}, {corr}, (1<<48)|(100<<24), 4, 4, 1, 1, 1, 1, 1, 1, 8);",
                    t + 50,
                    t + 700,
                    t + 900
                ));
                corr += 1;
            }
        }
    }
    let path = build(dir.path(), "many.sqlite", &[&sql]);
    let (defs, events) = import(&path, &Default::default());
    assert_sorted(&events, "many ranges");
    let projected: Vec<&tracex_ir::Slice> = events
        .iter()
        .filter_map(|e| match e {
            Event::Slice(s) if defs.opt_str(s.cat) == Some("nvtx_kernel") => Some(s),
            _ => None,
        })
        .collect();
    // every range launched two kernels: one projection per range, plus the outer one
    assert_eq!(projected.len(), 6001);
    let outer = projected
        .iter()
        .find(|s| defs.str(s.name) == "outer")
        .unwrap();
    assert_eq!((outer.ts, outer.dur), (1800, Some(3001200 - 1800)));
    let first = projected
        .iter()
        .find(|s| defs.str(s.name) == "r102")
        .unwrap();
    assert_eq!((first.ts, first.dur), (1807, Some(2207 - 1807)));
}

/// Stream types and priorities (TARGET_INFO_CUDA_STREAM), the CUDA index each process saw a GPU
/// as (TARGET_INFO_CUDA_DEVICE) and captured stdout/stderr (ProcessStreams) are kept, each
/// compared with the table's own rows.
#[test]
fn stream_types_device_ids_and_captured_output_are_kept() {
    let mut checked = 0;
    for f in corpus_files("nsys") {
        let db =
            rusqlite::Connection::open_with_flags(&f, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        let rows = |sql: &str| -> Vec<(i64, String)> {
            match db.prepare(sql) {
                Ok(mut st) => st
                    .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
                    .unwrap()
                    .map(|r| r.unwrap())
                    .collect(),
                Err(_) => Vec::new(),
            }
        };
        let out = rows("SELECT p.globalPid, c.value FROM ProcessStreams p JOIN StringIds c ON c.id = p.contentId WHERE c.value <> ''");
        let devices =
            rows("SELECT gpuId, CAST(pid AS TEXT) || ':' || cudaId FROM TARGET_INFO_CUDA_DEVICE");
        if out.is_empty() && devices.is_empty() {
            continue;
        }
        let d = dump(&f);
        for (_, content) in &out {
            // the dump quotes the text; its first line is enough to find it
            let first = content.lines().next().unwrap_or("");
            assert!(
                d.contains(&first.replace('"', "\\\"")),
                "{}: output {first:?} missing",
                f.display()
            );
        }
        assert!(
            out.is_empty() || d.contains("meta \"stdout\"=") || d.contains("meta \"stderr\"="),
            "{}",
            f.display()
        );
        for (_, pid_cuda) in &devices {
            let (pid, cuda) = pid_cuda.split_once(':').unwrap();
            assert!(
                d.contains(&format!("\"cuda_device_by_pid\"={{\"{pid}\":{cuda}")),
                "{}: {pid_cuda}",
                f.display()
            );
        }
        checked += 1;
    }
    eprintln!("stream/device/output tables: {checked} real exports checked");
    // event syncs tied to no stream get a track of their own, not "stream 4294967295"
    if let Some(f) = corpus_files("nsys")
        .into_iter()
        .find(|f| f.to_string_lossy().contains("cloverleaf"))
    {
        let d = dump(&f);
        assert!(
            d.contains("name=\"no stream (synchronization)\"")
                && !d.contains("\"stream 4294967295\""),
            "{d}"
        );
    }
}

/// The nsys importer queues rows in temporary files, and reads compressed exports from a
/// temporary copy: where the temporary directory cannot be written, every database the tests
/// build fails naming it and the remedy, never with the bare OS error (which reads as if the
/// input were missing), and leaves nothing behind.
#[test]
fn unwritable_temporary_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let mut inputs: Vec<PathBuf> = own_databases(dir.path())
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    let gz = dir.path().join("cuda.sqlite.gz");
    let mut z = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    z.write_all(&std::fs::read(&inputs[0]).unwrap()).unwrap();
    z.finish().unwrap();
    inputs.push(gz);
    for input in &inputs {
        let mut cmd = tracex();
        cmd.env("TMPDIR", &missing)
            .arg("convert")
            .arg(input)
            .arg(dir.path().join("out.json"));
        let err = fails_leaving_dir_as_it_was(cmd, dir.path());
        assert!(
            err.contains("missing") && err.contains("TMPDIR"),
            "{}: the directory and the remedy are not named: {err}",
            input.display()
        );
    }
    println!("all {} conversions stopped, naming TMPDIR", inputs.len());
}

/// The big tables are read straight from the file's pages (`pages.rs`) where the file and
/// the table allow it: the output must be the one SQLite's reading gives, byte for byte, on
/// every real export, the databases the tests build, and generated exports stored in time
/// order, thread after thread and shuffled (which the reader reorders in a window and through
/// the shuffle).
#[test]
fn page_scans_give_the_output_sqlite_scans_give() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs: Vec<PathBuf> = corpus_files("nsys");
    inputs.extend(own_databases(dir.path()).into_iter().map(|(_, p)| p));
    for (name, unsorted, shuffle) in [
        ("sorted", false, false),
        ("unsorted", true, false),
        ("shuffled", false, true),
    ] {
        let out = dir.path().join(format!("gen-{name}.sqlite"));
        tracex_gen::nsys::run(&tracex_gen::nsys::Args {
            kernels: 3000,
            nvtx: 300,
            unsorted,
            shuffle,
            overlap: if shuffle { 40 } else { 0 },
            kernel_scale: 1.0,
            out: out.to_string_lossy().into_owned(),
        })
        .unwrap();
        inputs.push(out);
    }
    for input in &inputs {
        let convert = |sqlite_only: bool| {
            let out = dir.path().join(format!("out-{sqlite_only}.json"));
            let mut cmd = tracex();
            if sqlite_only {
                cmd.env("TRACEX_NSYS_SQLITE_SCANS", "1");
            }
            let o = cmd
                .args(["convert", "-f", "--from", "nsys"])
                .arg(input)
                .arg(&out)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}: {o:?}", input.display());
            std::fs::read(&out).unwrap()
        };
        let (pages, sqlite) = (convert(false), convert(true));
        assert!(
            pages == sqlite,
            "{}: the page reader's output differs from SQLite's",
            input.display()
        );
    }
    eprintln!("page scans: {} exports give SQLite's output", inputs.len());
}

/// The same export gives the same bytes on every run, however the reader threads and the
/// nvtx-kernel pass happen to be scheduled (before the merge waited for a spool's next row,
/// the GindaChen export numbered its GPU tracks in two ways, one run in four).
#[test]
fn every_run_gives_the_same_output() {
    let dir = tempfile::tempdir().unwrap();
    let files = corpus_files("nsys");
    for f in &files {
        let outputs: Vec<Vec<u8>> = (0..6)
            .map(|i| {
                let out = dir.path().join(format!("run{i}.json"));
                run_ok(&["convert", "-f", f.to_str().unwrap(), out.to_str().unwrap()]);
                std::fs::read(&out).unwrap()
            })
            .collect();
        assert!(
            outputs.windows(2).all(|w| w[0] == w[1]),
            "{}: runs differ",
            f.display()
        );
    }
    eprintln!(
        "deterministic output: {} real exports, 6 runs each",
        files.len()
    );
}
