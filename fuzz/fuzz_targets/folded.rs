//! Folded stacks, dialect decided from the input (plain `stack count`, differential, or the
//! extended uprobe lines).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tracex_fuzz::check_stream(data, |d, ctx| {
        tracex_folded::import(d, &tracex_folded::ImportOptions::default(), ctx)
    });
});
