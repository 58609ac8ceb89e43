//! Nsight Systems SQLite exports. The input is the SQL that builds the database (seeds: the
//! schema of an export with a few rows), so mutations give what a broken export holds: NULLs,
//! wrong types, missing tables and columns, dangling string ids, ends before starts. Statements
//! that reach outside the database or run without bound are refused before running.
#![no_main]
use libfuzzer_sys::fuzz_target;

/// SQL the harness will not run: other files (ATTACH, VACUUM INTO), extensions, and statements
/// that generate rows or bytes without bound.
const REFUSED: [&str; 6] = [
    "attach",
    "vacuum",
    "load_extension",
    "recursive",
    "zeroblob",
    "randomblob",
];

fuzz_target!(|data: &[u8]| {
    let Ok(sql) = std::str::from_utf8(data) else {
        return;
    };
    let lower = sql.to_ascii_lowercase();
    if REFUSED.iter().any(|w| lower.contains(w)) {
        return;
    }
    tracex_fuzz::check_file(
        |dir| {
            let path = dir.join("fuzz.sqlite");
            let conn = rusqlite::Connection::open(&path).ok()?;
            // whatever part of the script runs is the database under test
            let _ = conn.execute_batch(sql);
            drop(conn);
            Some(path)
        },
        |path, ctx| tracex_nsys::import(path, &tracex_nsys::ImportOptions::default(), ctx),
    );
});
