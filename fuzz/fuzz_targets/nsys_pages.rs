//! Nsight Systems exports as the bytes of the database file. Seeds are small exports with
//! 512-byte pages, so mutations damage what tracex reads itself (`pages.rs`: b-tree pages,
//! cell pointers, records, overflow chains) behind a schema SQLite still reads; what SQLite
//! then reads is checked too.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tracex_fuzz::check_file(
        |dir| {
            let path = dir.join("fuzz.sqlite");
            std::fs::write(&path, data).ok()?;
            Some(path)
        },
        |path, ctx| tracex_nsys::import(path, &tracex_nsys::ImportOptions::default(), ctx),
    );
});
