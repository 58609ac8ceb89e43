//! CUPTI records of GPU flame-graph pipelines, text or JSON (the importer decides).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tracex_fuzz::check_stream(data, |d, ctx| tracex_cupti::import(d, &Default::default(), ctx));
});
