//! JSON identity properties, cut into pieces short enough for one OTF2 definition record.

use otf2_sys as sys;

use super::strings::Strings;
use crate::ffi::{ArchiveWriter, AttrValue, Result};
use crate::identity;

/// What a property belongs to.
#[derive(Clone, Copy, Debug)]
pub enum Owner {
    Node(u32),
    Group(u32),
    Location(u64),
}

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
        let g = ar.global_defs()?;
        match owner {
            Owner::Node(r) => g.system_tree_node_property(sys::OTF2_SystemTreeNodeRef(r), n, v)?,
            Owner::Group(r) => g.location_group_property(sys::OTF2_LocationGroupRef(r), n, v)?,
            Owner::Location(r) => g.location_property(sys::OTF2_LocationRef(r), n, v)?,
        }
    }
    Ok(())
}
