//! The hostile-input catalogue: inputs a careful user (or an attacker) can hand tracex. For each
//! case: the exit code, a message naming the place (the file, and the line, byte, row or event
//! where there is one), no panic, no partial output or temporary left beside the output, and the
//! input unchanged (hashed before and after).

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::*;

/// What a case gives tracex: files it creates in the case's directory, and the arguments,
/// where `{in}` is the first input and `{dir}` the case's directory.
struct Case {
    name: &'static str,
    make: fn(&Path) -> PathBuf,
    args: &'static [&'static str],
    exit: i32,
    /// Lower-case fragments the message on stderr must contain (the place first).
    says: &'static [&'static str],
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

const ONE: &[u8] = br#"[{"name":"a","ph":"X","ts":1,"dur":2,"pid":1,"tid":1}]"#;

/// A small valid nsys export built with rusqlite (the schema parts the importer needs).
fn nsys_db(path: &Path) {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE ThreadNames (nameId INTEGER, priority INTEGER, globalTid INTEGER);
         CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER,
             globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER);
         INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel');
         INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100, 200, 0, 281474993487872, 1, 1, 0, NULL);",
    )
    .unwrap();
    let mut big = String::from("BEGIN;");
    for i in 0..2000 {
        big.push_str(&format!(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({}, {}, 0, 281474993487872, {i}, 1, 0, NULL);",
            1000 + i * 10,
            1005 + i * 10
        ));
    }
    big.push_str("COMMIT;");
    c.execute_batch(&big).unwrap();
}

/// An OTF2 archive written by tracex from the bundled Chrome fixture; returns the anchor.
fn otf2_archive(dir: &Path) -> PathBuf {
    let out = dir.join("a.otf2");
    run_ok(&[
        "convert",
        root()
            .join("fixtures/chrome/all_phases.json")
            .to_str()
            .unwrap(),
        out.to_str().unwrap(),
    ]);
    out
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "empty file",
            make: |d| write(d, "in.json", b""),
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 1,
            says: &["in.json", "empty"],
        },
        Case {
            name: "whitespace only",
            make: |d| write(d, "in.json", b"  \n\t\r\n   "),
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 1,
            says: &["in.json", "no format recognised"],
        },
        Case {
            name: "binary garbage",
            make: |d| {
                let v: Vec<u8> = (0..4096u32)
                    .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
                    .collect();
                write(d, "in.bin", &v)
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 1,
            says: &["in.bin", "no format recognised"],
        },
        Case {
            name: "UTF-8 byte order mark before the JSON",
            make: |d| write(d, "in.json", &[b"\xef\xbb\xbf", ONE].concat()),
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &[],
        },
        Case {
            name: "invalid UTF-8 in a name",
            make: |d| {
                write(
                    d,
                    "in.json",
                    b"[{\"name\":\"a\xff\xfe\",\"ph\":\"X\",\"ts\":1,\"dur\":2,\"pid\":1,\"tid\":1}]",
                )
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 1,
            says: &["in.json", "byte"],
        },
        Case {
            name: "truncated gzip",
            make: |d| {
                let z = gzip(&ONE.repeat(200));
                write(d, "in.json.gz", &z[..z.len() / 2])
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 1,
            says: &["in.json.gz"],
        },
        Case {
            name: "corrupt gzip (damaged deflate data)",
            make: |d| {
                let mut z = gzip(&ONE.repeat(200));
                let n = z.len();
                for b in &mut z[20..n - 8] {
                    *b ^= 0x5a;
                }
                write(d, "in.json.gz", &z)
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 1,
            says: &["in.json.gz"],
        },
        Case {
            name: "gzip of nothing",
            make: |d| write(d, "in.json.gz", &gzip(b"")),
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 1,
            says: &["in.json.gz", "empty"],
        },
        Case {
            name: "NaN timestamp",
            make: |d| {
                write(
                    d,
                    "in.json",
                    br#"[{"name":"a","ph":"X","ts":NaN,"dur":2,"pid":1,"tid":1}]"#,
                )
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 1,
            says: &["in.json", "byte"],
        },
        Case {
            name: "1e400 timestamp",
            make: |d| {
                write(
                    d,
                    "in.json",
                    br#"[{"name":"a","ph":"X","ts":1e400,"dur":2,"pid":1,"tid":1}]"#,
                )
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &["chrome_bad_ts", "event #0", "1e400"],
        },
        Case {
            name: "2^64 timestamp",
            make: |d| {
                write(
                    d,
                    "in.json",
                    br#"[{"name":"a","ph":"X","ts":18446744073709551616,"dur":2,"pid":1,"tid":1}]"#,
                )
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &["chrome_bad_ts", "event #0", "18446744073709551616"],
        },
        Case {
            name: "negative duration",
            make: |d| {
                write(
                    d,
                    "in.json",
                    br#"[{"name":"a","ph":"X","ts":10,"dur":-5,"pid":1,"tid":1}]"#,
                )
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &["slice_negative_duration", "event #0"],
        },
        Case {
            name: "unmatched E",
            make: |d| {
                write(d, "in.json", br#"[{"name":"a","ph":"E","ts":10,"pid":1,"tid":1},{"name":"b","ph":"X","ts":1,"dur":2,"pid":1,"tid":1}]"#)
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &["chrome_unmatched_end", "event #0"],
        },
        Case {
            name: "64-bit pid and tid",
            make: |d| {
                write(d, "in.json", br#"[{"name":"a","ph":"X","ts":1,"dur":2,"pid":18446744073709551615,"tid":9223372036854775807}]"#)
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &[],
        },
        Case {
            name: "string ids",
            make: |d| {
                write(d, "in.json", br#"[{"name":"a","ph":"b","cat":"c","id":"0xdeadbeefcafef00d1234","ts":1,"pid":"browser","tid":"io"},{"name":"a","ph":"e","cat":"c","id":"0xdeadbeefcafef00d1234","ts":3,"pid":"browser","tid":"io"}]"#)
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &[],
        },
        Case {
            name: "duplicate keys",
            make: |d| {
                write(
                    d,
                    "in.json",
                    br#"[{"name":"a","ph":"X","ts":1,"ts":5,"dur":2,"pid":1,"tid":1}]"#,
                )
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &[],
        },
        Case {
            name: "trailing garbage after the array",
            make: |d| write(d, "in.json", &[ONE, b" }}garbage"].concat()),
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &["chrome_trailing_data", "byte 55"],
        },
        Case {
            name: "arguments nested 100 000 deep",
            make: |d| {
                let deep = format!(
                    r#"[{{"name":"a","ph":"X","ts":1,"dur":2,"pid":1,"tid":1,"args":{{"x":{}{}}}}}]"#,
                    "[".repeat(100_000),
                    "]".repeat(100_000)
                );
                write(d, "in.json", deep.as_bytes())
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &[],
        },
        Case {
            name: "a 4 MB name",
            make: |d| {
                let name = "n".repeat(4 << 20);
                let t = format!(r#"[{{"name":"{name}","ph":"X","ts":1,"dur":2,"pid":1,"tid":1}}]"#);
                write(d, "in.json", t.as_bytes())
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &[],
        },
        Case {
            name: "timestamp as a string",
            make: |d| {
                write(
                    d,
                    "in.json",
                    br#"[{"name":"a","ph":"X","ts":"12.5","dur":2,"pid":1,"tid":1}]"#,
                )
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &[],
        },
        Case {
            name: "object without traceEvents",
            make: |d| write(d, "in.json", br#"{"displayTimeUnit":"ns","otherData":{}}"#),
            args: &["convert", "{in}", "{dir}/out.json", "--from", "chrome"],
            exit: 0,
            says: &[],
        },
        Case {
            name: "unterminated event array (torn write)",
            make: |d| write(d, "in.json", &ONE[..ONE.len() - 10]),
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &["chrome_torn_event", "chrome_unterminated", "byte 1"],
        },
        Case {
            name: "a directory that is no archive",
            make: |d| {
                let p = d.join("somedir");
                std::fs::create_dir(&p).unwrap();
                write(&p, "notes.txt", b"hello");
                p
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 1,
            says: &["somedir"],
        },
        Case {
            name: "/dev/null",
            make: |_| PathBuf::from("/dev/null"),
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 1,
            says: &["/dev/null", "character device"],
        },
        Case {
            name: "a missing path",
            make: |d| d.join("no-such-file.json"),
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 1,
            says: &["no-such-file.json", "cannot open"],
        },
        Case {
            name: "output into a missing directory",
            make: |d| write(d, "in.json", ONE),
            args: &["convert", "{in}", "{dir}/missing/out.json"],
            exit: 1,
            says: &["missing/out.json"],
        },
        Case {
            name: "output equal to the input",
            make: |d| write(d, "in.json", ONE),
            args: &["convert", "-f", "{in}", "{in}"],
            exit: 1,
            says: &["in.json", "never overwrites"],
        },
        Case {
            name: "output exists, no --force",
            make: |d| {
                write(d, "out.json", b"keep me");
                write(d, "in.json", ONE)
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 1,
            says: &["out.json", "--force"],
        },
        Case {
            name: "folded: a count that is no number",
            make: |d| write(d, "in.folded", b"main;a 3\nmain;b x7\n"),
            args: &["convert", "{in}", "{dir}/out.json", "--from", "folded"],
            exit: 0,
            says: &["folded_missing_count", "line 2", "main;b x7"],
        },
        Case {
            name: "folded: bad extended lines",
            make: |_| root().join("fixtures/folded/extended_bad.txt"),
            args: &["convert", "{in}", "{dir}/out.json", "--from", "folded"],
            exit: 0,
            says: &["line"],
        },
        Case {
            name: "CUPTI JSON with wrong types",
            make: |d| {
                write(d, "in.json", br#"{"traceEvents":[{"name":7,"ph":"X","cat":"kernel","ts":"x","pid":[],"tid":{}}]}"#)
            },
            args: &["convert", "{in}", "{dir}/out.json", "--from", "cupti"],
            exit: 1,
            says: &["in.json", "byte 24", "event #0"],
        },
        Case {
            name: "SQLite with a corrupt page",
            make: |d| {
                let p = d.join("in.sqlite");
                nsys_db(&p);
                let mut b = std::fs::read(&p).unwrap();
                let page = 4096.min(b.len() / 2);
                let n = b.len();
                for x in &mut b[page..n.min(page * 3)] {
                    *x = 0xA5;
                }
                std::fs::write(&p, &b).unwrap();
                p
            },
            args: &["convert", "{in}", "{dir}/out.json", "--from", "nsys"],
            exit: 1,
            says: &["in.sqlite"],
        },
        Case {
            name: "SQLite that is no nsys export",
            make: |d| {
                let p = d.join("in.sqlite");
                let c = rusqlite::Connection::open(&p).unwrap();
                c.execute_batch("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);")
                    .unwrap();
                p
            },
            args: &["convert", "{in}", "{dir}/out.json", "--from", "nsys"],
            exit: 1,
            says: &["in.sqlite"],
        },
        Case {
            name: "nsys export locked by a writer",
            make: |d| {
                let p = d.join("in.sqlite");
                nsys_db(&p);
                let c = rusqlite::Connection::open(&p).unwrap();
                c.execute_batch("BEGIN EXCLUSIVE; INSERT INTO StringIds VALUES (77, 'w');")
                    .unwrap();
                // the writer holds its lock for as long as the test process runs
                std::mem::forget(c);
                p
            },
            args: &["convert", "{in}", "{dir}/out.json", "--from", "nsys"],
            // read as it was committed (the importer opens exports read-only and immutable)
            exit: 0,
            says: &[],
        },
        Case {
            name: "nsys export in WAL mode",
            make: |d| {
                let p = d.join("in.sqlite");
                nsys_db(&p);
                let c = rusqlite::Connection::open(&p).unwrap();
                c.pragma_update(None, "journal_mode", "wal").unwrap();
                p
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &[],
        },
        Case {
            name: "nsys export whose end is before its start",
            make: |d| {
                let p = d.join("in.sqlite");
                nsys_db(&p);
                let c = rusqlite::Connection::open(&p).unwrap();
                c.execute_batch("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = start - 50 WHERE correlationId = 1;").unwrap();
                p
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &["row"],
        },
        Case {
            name: "nsys export with a dangling string id and NULLs",
            make: |d| {
                let p = d.join("in.sqlite");
                nsys_db(&p);
                let c = rusqlite::Connection::open(&p).unwrap();
                c.execute_batch(
                    "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = 999 WHERE correlationId = 2;
                     UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = NULL WHERE correlationId = 3;
                     UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET globalTid = 'text' WHERE correlationId = 4;",
                )
                .unwrap();
                p
            },
            args: &["convert", "{in}", "{dir}/out.json"],
            exit: 0,
            says: &["row"],
        },
        Case {
            name: "OTF2 anchor without its .def",
            make: |d| {
                let a = otf2_archive(d);
                std::fs::remove_file(d.join("a.def")).unwrap();
                a
            },
            args: &["convert", "{in}", "{dir}/out.json", "--from", "otf2"],
            exit: 1,
            says: &["a.otf2"],
        },
        Case {
            name: "OTF2 with a truncated .evt",
            make: |d| {
                let a = otf2_archive(d);
                let evt = d.join("a/0.evt");
                let b = std::fs::read(&evt).unwrap();
                std::fs::write(&evt, &b[..b.len() * 2 / 3]).unwrap();
                a
            },
            args: &["convert", "{in}", "{dir}/out.json", "--from", "otf2"],
            exit: 1,
            says: &["a.otf2"],
        },
        Case {
            name: "OTF2 directory with two archives",
            make: |d| {
                let sub = d.join("two");
                std::fs::create_dir(&sub).unwrap();
                otf2_archive(&sub);
                std::fs::copy(sub.join("a.otf2"), sub.join("b.otf2")).unwrap();
                sub
            },
            args: &["convert", "{in}", "{dir}/out.json", "--from", "otf2"],
            exit: 1,
            says: &["two", "several otf2 archives"],
        },
        Case {
            name: "an unknown --from format",
            make: |d| write(d, "in.json", ONE),
            args: &["convert", "{in}", "{dir}/out.json", "--from", "pdf"],
            exit: 1,
            says: &["pdf"],
        },
        Case {
            name: "a socket (info)",
            make: |d| {
                let p = d.join("sock");
                let l = std::os::unix::net::UnixListener::bind(&p).unwrap();
                std::mem::forget(l);
                p
            },
            args: &["info", "{in}"],
            exit: 1,
            says: &["sock", "a socket"],
        },
    ]
}

/// Every regular file under `dir` with its hash (directories by their entries).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, u64> {
    let mut m = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                m.insert(p.clone(), 0);
                todo.push(p);
            } else if t.is_file() {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::fs::read(&p).unwrap().hash(&mut h);
                m.insert(p, h.finish());
            } else {
                m.insert(p, 1);
            }
        }
    }
    m
}

fn run_case(c: &Case) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = (c.make)(d);
    let before = snapshot(d);
    let outside_before = (!input.starts_with(d))
        .then(|| std::fs::read(&input).ok())
        .flatten();
    let args: Vec<String> = c
        .args
        .iter()
        .map(|a| {
            a.replace("{in}", input.to_str().unwrap())
                .replace("{dir}", d.to_str().unwrap())
        })
        .collect();
    let out: Output = tracex_loud()
        .args(&args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_lowercase();
    let mut problems = Vec::new();
    if out.status.code() != Some(c.exit) {
        problems.push(format!("exit {:?}, expected {}", out.status, c.exit));
    }
    if stderr.contains("panicked") || stderr.contains("rust_backtrace") {
        problems.push("panicked".to_string());
    }
    for s in c.says {
        if !stderr.contains(&s.to_lowercase()) {
            problems.push(format!("message lacks {s:?}"));
        }
    }
    let after = snapshot(d);
    for (p, h) in &before {
        match after.get(p) {
            Some(h2) if h2 == h => {}
            Some(_) => problems.push(format!("{} changed", p.display())),
            None => problems.push(format!("{} disappeared", p.display())),
        }
    }
    let new: Vec<&PathBuf> = after.keys().filter(|p| !before.contains_key(*p)).collect();
    let out_file = d.join("out.json");
    for p in &new {
        let ok = c.exit == 0 && **p == out_file;
        if !ok {
            problems.push(format!("left behind: {}", p.display()));
        }
    }
    if c.exit == 0 && !out_file.exists() && c.args.contains(&"{dir}/out.json") {
        problems.push("no output".to_string());
    }
    if let Some(b) = outside_before {
        if std::fs::read(&input).ok() != Some(b) {
            problems.push("input changed".to_string());
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}\n  stderr: {}",
            c.name,
            problems.join("; "),
            stderr.trim()
        ))
    }
}

#[test]
fn hostile_catalogue() {
    let cases = cases();
    let failures: Vec<String> = cases.iter().filter_map(|c| run_case(c).err()).collect();
    println!(
        "hostile catalogue: {} cases, {} failed",
        cases.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs tracex under `/usr/bin/time` and returns its output and peak resident memory in MiB;
/// `None` (and a note) where GNU time is not installed.
fn peak_rss_mib(args: &[&str]) -> Option<(Output, u64)> {
    let time = Path::new("/usr/bin/time");
    if !time.is_file() {
        println!("note: /usr/bin/time missing (Debian package time); memory not measured");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("rss");
    let bin = std::env::var_os("TRACEX_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tracex")));
    let out = std::process::Command::new(time)
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&report)
        .arg(bin)
        .arg("--quiet")
        .args(args)
        .output()
        .unwrap();
    let kb: u64 = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    Some((out, kb / 1024))
}

/// `n` complete slices on one thread, each enclosing the next (`X` events).
fn nested_x(n: u64) -> Vec<u8> {
    let mut v = b"[".to_vec();
    for i in 0..n {
        if i > 0 {
            v.push(b',');
        }
        v.extend_from_slice(
            format!(
                r#"{{"name":"a","ph":"X","ts":{i},"dur":{},"pid":1,"tid":1}}"#,
                2 * n - 2 * i
            )
            .as_bytes(),
        );
    }
    v.push(b']');
    v
}

/// Defect 4: a timeline flame graph of a stack N deep costs O(N) memory. The output of this
/// input is inherently O(N²) (N lines, up to N frames each: 100 MB here); memory must not be.
#[test]
fn deep_nesting_to_folded_costs_memory_linear_in_depth() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "deep.json", &nested_x(10_000));
    let out = dir.path().join("deep.folded");
    let Some((o, mib)) = peak_rss_mib(&["convert", input.to_str().unwrap(), out.to_str().unwrap()])
    else {
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let size = std::fs::metadata(&out).unwrap().len();
    println!("10 000 nested X → folded: {size} bytes written, peak RSS {mib} MiB");
    assert!(size > 90_000_000, "{size}");
    assert!(mib < 64, "peak RSS {mib} MiB for a 10 000-deep stack");
    // the lines are those of the stacks, in order: the deepest holds every frame
    let text = std::fs::read_to_string(&out).unwrap();
    let first = text.lines().next().unwrap();
    assert_eq!(first, "a 2000");
    assert_eq!(text.lines().count(), 10_000);
    let last = text.lines().last().unwrap();
    assert_eq!(last.matches(';').count(), 9_999);
}

/// Defect 4: one Chrome counter event with thousands of series must not give thousands of
/// OTF2 locations (libotf2 holds ≥ 256 KiB for each).
#[test]
fn many_counter_series_to_otf2_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = b"[".to_vec();
    for e in 0..20 {
        if e > 0 {
            t.push(b',');
        }
        let args: Vec<String> = (0..3000).map(|k| format!(r#""k{k}":{}"#, k + e)).collect();
        t.extend_from_slice(
            format!(
                r#"{{"name":"c","ph":"C","ts":{e},"pid":1,"tid":1,"args":{{{}}}}}"#,
                args.join(",")
            )
            .as_bytes(),
        );
    }
    t.push(b']');
    let input = write(dir.path(), "keys.json", &t);
    let out = dir.path().join("keys.otf2");
    let Some((o, mib)) = peak_rss_mib(&["convert", input.to_str().unwrap(), out.to_str().unwrap()])
    else {
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    println!("20 counter events × 3 000 series → OTF2: peak RSS {mib} MiB");
    assert!(mib < 200, "peak RSS {mib} MiB for 3 000 series");
    // every series is still there, read back
    let dump = dump(&out);
    for k in ["k0", "k1500", "k2999"] {
        assert!(dump.contains(k), "series {k} lost");
    }
}

/// `--max-memory`: a conversion over the limit stops with a clear error and writes nothing.
#[test]
fn max_memory_stops_with_an_error_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "deep.json", &nested_x(20_000));
    let mut cmd = tracex();
    cmd.args(["--max-memory", "1M", "convert"])
        .arg(&input)
        .arg(dir.path().join("out.json"));
    let err = fails_leaving_dir_as_it_was(cmd, dir.path());
    assert!(err.contains("memory limit exceeded"), "{err}");
    let err = run_err(&["--max-memory", "lots", "info", input.to_str().unwrap()]);
    assert!(err.contains("--max-memory"), "{err}");
}

/// Sorting spills runs to the temporary directory: where it cannot be written, the conversion
/// stops with an error that names it and the remedy, and writes nothing.
#[test]
fn unwritable_temporary_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "deep.json", &nested_x(50_000));
    let mut cmd = tracex();
    cmd.env("TMPDIR", dir.path().join("missing"))
        .args(["convert", "--mem-budget", "1M"])
        .arg(&input)
        .arg(dir.path().join("out.json"));
    let err = fails_leaving_dir_as_it_was(cmd, dir.path());
    assert!(
        err.contains("missing") && err.contains("TMPDIR"),
        "the directory and the remedy are not named: {err}"
    );
}

/// Defect 6: temporaries of a tracex that was killed (SIGKILL, OOM killer) are removed by the
/// next run into the same directory, which says so; those of a live process are not.
#[test]
fn stale_temporaries_of_killed_runs_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // a process id that existed and is gone
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale_file = write(d, &format!(".x.json.tracex-tmp-{dead}-AbC123"), b"partial");
    let stale_dir = d.join(format!(".x.tracex-tmp-{dead}-QwErTy"));
    std::fs::create_dir_all(stale_dir.join("x")).unwrap();
    std::fs::write(stale_dir.join("x/0.evt"), b"partial").unwrap();
    // pid 1 always exists: not ours to remove
    let live = write(d, ".y.json.tracex-tmp-1-ZzZzZz", b"someone is writing");
    let other = write(d, ".x.json.tracex-tmp-notapid", b"not tracex's");
    let input = root().join("fixtures/chrome/all_phases.json");
    let o = tracex()
        .arg("convert")
        .arg(&input)
        .arg(d.join("out.json"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!stale_file.exists() && !stale_dir.exists(), "{err}");
    assert!(live.exists() && other.exists());
    assert!(
        err.contains("removed") && err.contains(&dead.to_string()),
        "no word about the removal: {err}"
    );
    // an OTF2 output sweeps its directory the same way
    let stale_again = write(d, &format!(".z.tracex-tmp-{dead}-aaaaaa"), b"partial");
    run_ok(&[
        "convert",
        input.to_str().unwrap(),
        d.join("o.otf2").to_str().unwrap(),
    ]);
    assert!(!stale_again.exists());
}

/// Defect 5: a full file system. Every output format exits 1 with a message that says the
/// disk is full, and leaves nothing behind. Needs root to mount a 1 MB tmpfs.
#[test]
fn disk_full_fails_cleanly_for_every_format() {
    let mnt = tempfile::tempdir().unwrap();
    let m = mnt.path();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(m)
        .output();
    match &mounted {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            println!(
                "skipped: cannot mount a tmpfs (needs root): {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return;
        }
        Err(e) => {
            println!("skipped: cannot run mount: {e}");
            return;
        }
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _u = Unmount(m);
    // 150 000 distinct slices on 8 threads: every output is well over 1 MB
    let src = tempfile::tempdir().unwrap();
    let mut t = b"[".to_vec();
    for i in 0..150_000u64 {
        if i > 0 {
            t.push(b',');
        }
        t.extend_from_slice(
            format!(
                r#"{{"name":"fn_{i}","cat":"c","ph":"X","ts":{},"dur":5,"pid":1,"tid":{},"args":{{"a":{i}}}}}"#,
                i * 10,
                i % 8
            )
            .as_bytes(),
        );
    }
    t.push(b']');
    let input = write(src.path(), "big.json", &t);
    let mut failures = Vec::new();
    for out in ["a.json", "a.json.gz", "a.otf2", "archive-dir", "a.folded"] {
        let mut args = vec!["convert".to_string(), input.to_str().unwrap().to_string()];
        args.push(m.join(out).to_str().unwrap().to_string());
        if out == "archive-dir" {
            args.extend(["--to".to_string(), "otf2".to_string()]);
        }
        let o = tracex().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_lowercase();
        let left: Vec<_> = std::fs::read_dir(m)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let ok = o.status.code() == Some(1)
            && err.contains("no space left on device")
            && !err.contains("panicked")
            && left.is_empty();
        println!("disk full, {out}: {:?} {}", o.status, err.trim());
        if !ok {
            failures.push(format!("{out}: {:?}, left {left:?}: {err}", o.status));
        }
        for l in left {
            let p = m.join(l);
            let _ = std::fs::remove_dir_all(&p).or_else(|_| std::fs::remove_file(&p));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
