//! JSON identity properties, cut into pieces short enough for one OTF2 definition record.

use super::strings::Strings;
pub use crate::ffi::writer::PropertyOwner as Owner;
use crate::ffi::{ArchiveWriter, AttrValue, Result};
use crate::identity;

/// Writes `text` as the STRING property `name` of `owner` (in pieces `name`, `name+1`, ...).
pub fn write(
    ar: &mut ArchiveWriter,
    strings: &mut Strings,
    owner: Owner,
    name: &str,
    text: &str,
) -> Result<()> {
    for (i, piece) in identity::pieces(text).into_iter().enumerate() {
        let n = strings.name(ar, &identity::piece_name(name, i))?;
        let v = AttrValue::String(strings.value(ar, piece)?);
        ar.global_defs()?.property(owner, n, v)?;
    }
    Ok(())
}
