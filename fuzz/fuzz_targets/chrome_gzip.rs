//! Chrome Trace Event JSON through the gzip decoder tracex uses (multi-member), so corrupt and
//! truncated gzip streams are covered.
#![no_main]
use flate2::read::MultiGzDecoder;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tracex_fuzz::check_stream(data, |d, ctx| {
        tracex_chrome::import(
            MultiGzDecoder::new(d),
            &tracex_chrome::ImportOptions::default(),
            ctx,
        )
    });
});
