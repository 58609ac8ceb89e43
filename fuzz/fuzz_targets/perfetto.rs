//! Perfetto protobuf (`.pftrace`: TrackEvent packets, interned data, compressed bundles), read
//! from a file in two passes as `tracex convert` reads it.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tracex_fuzz::check_file(
        |dir| {
            let path = dir.join("in.pftrace");
            std::fs::write(&path, data).ok()?;
            Some(path)
        },
        |path, ctx| {
            tracex_perfetto::import(path, &tracex_perfetto::ImportOptions::default(), ctx)
        },
    );
});
