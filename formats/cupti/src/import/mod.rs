//! CUPTI activity records → IR, from either form: the raw text of the injection library
//! ([`text`]) or the Chrome JSON made from it ([`json`], read by the Chrome importer).
//!
//! Both map to the same IR: API calls are slices on the calling thread (`cuda_runtime`,
//! `cuda_driver`); kernels and copies are slices on a GPU stream track of a device process
//! (`kernel`, `gpu_memcpy`); a flow goes from each call to the GPU work with its correlation id.
//! Mapping and losses: `docs/formats/cupti.md`.

mod categories;
mod correlation;
mod devices;
pub mod json;
pub mod record;
mod records;
mod tally;
pub mod text;

pub use categories::{CAT_MEMORY, CAT_OVERHEAD};
pub use correlation::FLOW_NAME;
pub use devices::UNKNOWN_STREAM;

use std::io::{Cursor, Read};

use tracex_ir::{ImportCtx, Result};

use crate::options::ImportOptions;

/// Reads CUPTI records (text or Chrome JSON, told apart by the first byte that is not
/// whitespace) from `reader` into `ctx`.
pub fn import<R: Read + Send>(
    mut reader: R,
    _opts: &ImportOptions,
    ctx: &mut ImportCtx,
) -> Result<()> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    let first = loop {
        let n = reader.read(&mut chunk)?;
        head.extend_from_slice(&chunk[..n]);
        if let Some(b) = head.iter().find(|b| !b.is_ascii_whitespace()) {
            break Some(*b);
        }
        if n == 0 {
            break None;
        }
    };
    let input = Cursor::new(head).chain(reader);
    match first {
        Some(b'{' | b'[') => json::import(input, ctx),
        _ => text::import(input, ctx),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracex_ir::mem::Trace;
    use tracex_ir::{ArgsRead, Event};

    /// The arg keys of each slice `input` becomes, when the output reads `args`.
    fn slice_arg_keys(input: &str, args: ArgsRead) -> Vec<Vec<String>> {
        let opts = ImportOptions::default();
        let t = Trace::imported(args, |ctx| import(input.as_bytes(), &opts, ctx)).unwrap();
        (t.events.iter())
            .filter_map(|e| match e {
                Event::Slice(s) => Some(s.args.iter().map(|a| t.defs.str(a.key).into()).collect()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn args_the_output_does_not_read_are_not_made() {
        let text = "RUNTIME [ 100, 200 ] duration 100, \"cudaLaunchKernel_v7000\", cbid 211, processId 1, threadId 2, correlationId 5\n\
            CONCURRENT_KERNEL [ 300, 400 ] duration 100, \"k\", correlationId 5, cacheConfigRequested 0\n\
            \tgrid [ 64, 1, 1 ], block [ 256, 1, 1 ]\n\
            \tdeviceId 0, contextId 1, streamId 7\n";
        let json = r#"{"traceEvents": [
            {"name": "Runtime: cudaLaunchKernel_v7000", "ph": "X", "ts": 1.0, "dur": 1.0, "pid": 1, "tid": 2, "cat": "CUDA_Runtime", "args": {"cbid": "211", "correlationId": 5}},
            {"name": "Kernel: k", "ph": "X", "ts": 3.0, "dur": 1.0, "cat": "GPU_Kernel", "args": {"correlationId": 5, "deviceId": 0, "streamId": 7, "grid": [64, 1, 1]}}
        ]}"#;
        let all = [
            vec!["cbid", "correlationId"],
            vec![
                "correlationId",
                "cacheConfigRequested",
                "grid",
                "block",
                "deviceId",
                "contextId",
                "streamId",
            ],
        ];
        assert_eq!(slice_arg_keys(text, ArgsRead::All), all);
        let all = [
            vec!["cbid", "correlationId"],
            vec!["correlationId", "deviceId", "streamId", "grid"],
        ];
        assert_eq!(slice_arg_keys(json, ArgsRead::All), all);
        // the importers still read what they need themselves (the kernels' streams and the
        // calls' correlation), but make only the args the output reads
        let only = ArgsRead::Only(&["correlationId"]);
        for input in [text, json] {
            assert_eq!(
                slice_arg_keys(input, only),
                [["correlationId"], ["correlationId"]]
            );
        }
    }
}
