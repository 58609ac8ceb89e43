//! The contract every fuzz target checks, shared by the targets (`fuzz_targets/`).
//!
//! An importer given any bytes must: not panic (libFuzzer reports the panic), not hang (the
//! `-timeout` of `make fuzz` / `scripts/fuzz.sh`), stay under the memory bound (`-rss_limit_mb`),
//! and either succeed (whatever it could not map is a counted diagnostic) or fail with an error
//! that says what is wrong and where. The events go through the same sorter and overlap router
//! as in `tracex convert`, so their invariants are checked too.
//!
//! Adding a reader (e.g. Perfetto protobuf): a `fuzz_targets/<name>.rs` calling [`check_stream`]
//! or [`check_file`] with the importer, a `[[bin]]` entry in Cargo.toml, seeds in
//! `corpus/<name>/` (small, from `fixtures/` or generated), and the name in `TARGETS` of
//! `scripts/fuzz.sh`.

use std::path::Path;

use tracex_ir::nest::OverlapRouter;
use tracex_ir::order::Sorter;
use tracex_ir::sink::NullSink;
use tracex_ir::{Defs, Diagnostics, Error, ImportCtx, Location, Progress, Result, Stage};

/// The sorter's memory budget before it spills to disk (small: fuzz inputs are small).
const SORT_BUDGET: usize = 8 << 20;

/// Asserts the error contract: a message, and a place for malformed input.
pub fn assert_contract(r: Result<()>) {
    let Err(e) = r else { return };
    let text = e.to_string();
    assert!(!text.trim().is_empty(), "an error without a message: {e:?}");
    if let Error::Invalid { location, .. } = &e {
        assert!(
            *location != Location::Nowhere,
            "malformed input reported without a place: {text}"
        );
    }
}

/// Runs `import` into the conversion pipeline's stages and checks the contract.
pub fn run(import: impl FnOnce(&mut ImportCtx) -> Result<()>) {
    let mut defs = Defs::new();
    let mut diag = Diagnostics::default();
    let mut sink = Sorter::with_budget(OverlapRouter::new(NullSink::default()), SORT_BUDGET);
    let progress = Progress::new();
    let r = {
        let mut ctx = ImportCtx::new(&mut defs, &mut diag, &mut sink, &progress);
        import(&mut ctx)
    };
    let r = r.and_then(|()| sink.end(&mut defs, &mut diag));
    assert_contract(r);
}

/// A stream reader (Chrome JSON, folded, CUPTI) on `data`.
pub fn check_stream(data: &[u8], import: impl FnOnce(&[u8], &mut ImportCtx) -> Result<()>) {
    run(|ctx| import(data, ctx));
}

/// A reader of files (SQLite, OTF2 archives): `write` lays the input out in a fresh temporary
/// directory and returns the path to open, or `None` to skip an input it cannot lay out.
pub fn check_file(
    write: impl FnOnce(&Path) -> Option<std::path::PathBuf>,
    import: impl FnOnce(&Path, &mut ImportCtx) -> Result<()>,
) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let Some(path) = write(dir.path()) else {
        return;
    };
    run(|ctx| import(&path, ctx));
}

/// Splits an input into length-prefixed parts (`u32` little-endian length, then the bytes); a
/// short last part takes what is left. Used to carry several files in one fuzz input.
pub fn parts(mut data: &[u8]) -> Vec<&[u8]> {
    let mut v = Vec::new();
    while data.len() >= 4 {
        let n = u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize;
        data = &data[4..];
        let n = n.min(data.len());
        v.push(&data[..n]);
        data = &data[n..];
    }
    v
}

/// The inverse of [`parts`] (to build seeds).
pub fn join_parts(parts: &[&[u8]]) -> Vec<u8> {
    let mut v = Vec::new();
    for p in parts {
        v.extend_from_slice(&(p.len() as u32).to_le_bytes());
        v.extend_from_slice(p);
    }
    v
}
