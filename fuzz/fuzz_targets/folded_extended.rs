//! Extended folded lines (`timestamp_ns comm pid tid cpu stack`), forced.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tracex_folded::options::Dialect;

fuzz_target!(|data: &[u8]| {
    let mut opts = tracex_folded::ImportOptions::default();
    opts.dialect = Dialect::Extended;
    tracex_fuzz::check_stream(data, |d, ctx| tracex_folded::import(d, &opts, ctx));
});
