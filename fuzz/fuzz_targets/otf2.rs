//! OTF2 archives through libotf2 and the importer. One input carries the files of a
//! two-location archive as length-prefixed parts (`tracex_fuzz::parts`): the anchor
//! `traces.otf2`, the global definitions `traces.def`, then `traces/0.evt`, `traces/0.def`,
//! `traces/1.evt`, `traces/1.def` (missing parts are missing files).
#![no_main]
use libfuzzer_sys::fuzz_target;

const FILES: [&str; 6] = [
    "traces.otf2",
    "traces.def",
    "traces/0.evt",
    "traces/0.def",
    "traces/1.evt",
    "traces/1.def",
];

fuzz_target!(|data: &[u8]| {
    tracex_fuzz::check_file(
        |dir| {
            std::fs::create_dir(dir.join("traces")).ok()?;
            for (name, bytes) in FILES.iter().zip(tracex_fuzz::parts(data)) {
                std::fs::write(dir.join(name), bytes).ok()?;
            }
            Some(dir.join(FILES[0]))
        },
        |path, ctx| tracex_otf2::import(path, &tracex_otf2::ImportOptions::default(), ctx),
    );
});
