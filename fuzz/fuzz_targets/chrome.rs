//! Chrome Trace Event JSON (plain).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tracex_fuzz::check_stream(data, |d, ctx| {
        tracex_chrome::import(d, &tracex_chrome::ImportOptions::default(), ctx)
    });
});
