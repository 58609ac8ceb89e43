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
