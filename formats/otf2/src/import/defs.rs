//! The global definitions of an archive, collected as libotf2 reads them.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::ffi::reader::{MetricMemberDef, RegionDef};
use crate::ffi::{AttrValue, DefHandler, Result};

pub struct Node {
    pub name: u32,
    pub parent: u32,
    pub props: Vec<(u32, AttrValue)>,
}

pub struct LocationGroup {
    pub name: u32,
    pub ty: u8,
    pub parent: u32,
    pub props: Vec<(u32, AttrValue)>,
}

pub struct Location {
    pub name: u32,
    pub ty: u8,
    pub events: u64,
    pub group: u32,
    pub props: Vec<(u32, AttrValue)>,
}

pub struct Group {
    pub name: u32,
    pub ty: u8,
    pub paradigm: u8,
    pub members: Vec<u64>,
}

pub struct Attribute {
    pub name: u32,
    pub description: u32,
}

#[derive(Default)]
pub struct Otf2Defs {
    pub strings: FxHashMap<u32, String>,
    /// (timer resolution, global offset, trace length, realtime of the offset).
    pub clock: Option<(u64, u64, u64, u64)>,
    pub nodes: BTreeMap<u32, Node>,
    pub location_groups: BTreeMap<u32, LocationGroup>,
    pub locations: BTreeMap<u64, Location>,
    pub regions: FxHashMap<u32, RegionDef>,
    pub groups: BTreeMap<u32, Group>,
    /// comm → (its group, its name).
    pub comms: FxHashMap<u32, (u32, u32)>,
    /// I/O file or directory → its name.
    pub io_files: FxHashMap<u32, u32>,
    /// I/O handle → (its name, its file).
    pub io_handles: FxHashMap<u32, (u32, u32)>,
    pub attributes: FxHashMap<u32, Attribute>,
    pub members: FxHashMap<u32, MetricMemberDef>,
    pub classes: FxHashMap<u32, Vec<u32>>,
    /// metric instance → (its class, scope type, scope).
    pub instances: FxHashMap<u32, (u32, u8, u64)>,
    /// RMA window → its communicator.
    pub windows: FxHashMap<u32, u32>,
    /// calling context → (region, parent).
    pub contexts: FxHashMap<u32, (u32, u32)>,
    /// parameter → its name.
    pub parameters: FxHashMap<u32, u32>,
}

impl Otf2Defs {
    /// The text of a string definition ("" when undefined).
    pub fn s(&self, r: u32) -> &str {
        self.strings.get(&r).map_or("", String::as_str)
    }

    /// The text of a STRING property named `name`, rejoined from the pieces tracex splits
    /// long values into (`NAME`, `NAME+1`, `NAME+2`, ...).
    pub fn property(&self, props: &[(u32, AttrValue)], name: &str) -> Option<String> {
        let mut pieces: Vec<(u32, &str)> = props
            .iter()
            .filter_map(|(n, v)| {
                let AttrValue::String(s) = v else {
                    return None;
                };
                let key = self.s(*n);
                let index = if key == name {
                    0
                } else {
                    key.strip_prefix(name)?.strip_prefix('+')?.parse().ok()?
                };
                Some((index, self.s(s.0)))
            })
            .collect();
        if pieces.is_empty() {
            return None;
        }
        pieces.sort_by_key(|p| p.0);
        Some(pieces.into_iter().map(|p| p.1).collect())
    }

    /// What an I/O handle reads or writes: its file's name, else its own.
    pub fn io_target(&self, handle: u32) -> Option<&str> {
        let &(name, file) = self.io_handles.get(&handle)?;
        let file = self.io_files.get(&file).map(|&n| self.s(n));
        Some(file.filter(|f| !f.is_empty()).unwrap_or(self.s(name)))
    }

    /// The members of a metric (class or instance).
    pub fn metric_members(&self, metric: u32) -> Option<&[u32]> {
        self.classes
            .get(&metric)
            .or_else(|| {
                self.instances
                    .get(&metric)
                    .and_then(|(c, ..)| self.classes.get(c))
            })
            .map(Vec::as_slice)
    }
}

impl DefHandler for Otf2Defs {
    fn clock_properties(
        &mut self,
        resolution: u64,
        offset: u64,
        length: u64,
        realtime: u64,
    ) -> Result<()> {
        self.clock = Some((resolution, offset, length, realtime));
        Ok(())
    }
    fn string(&mut self, r: u32, s: &str) -> Result<()> {
        self.strings.insert(r, s.to_string());
        Ok(())
    }
    fn system_tree_node(&mut self, r: u32, name: u32, _class: u32, parent: u32) -> Result<()> {
        self.nodes.insert(
            r,
            Node {
                name,
                parent,
                props: Vec::new(),
            },
        );
        Ok(())
    }
    fn system_tree_node_property(&mut self, node: u32, name: u32, value: AttrValue) -> Result<()> {
        if let Some(n) = self.nodes.get_mut(&node) {
            n.props.push((name, value));
        }
        Ok(())
    }
    fn location_group(&mut self, r: u32, name: u32, ty: u8, parent: u32) -> Result<()> {
        self.location_groups.insert(
            r,
            LocationGroup {
                name,
                ty,
                parent,
                props: Vec::new(),
            },
        );
        Ok(())
    }
    fn location_group_property(&mut self, group: u32, name: u32, value: AttrValue) -> Result<()> {
        if let Some(g) = self.location_groups.get_mut(&group) {
            g.props.push((name, value));
        }
        Ok(())
    }
    fn location(&mut self, r: u64, name: u32, ty: u8, events: u64, group: u32) -> Result<()> {
        self.locations.insert(
            r,
            Location {
                name,
                ty,
                events,
                group,
                props: Vec::new(),
            },
        );
        Ok(())
    }
    fn location_property(&mut self, location: u64, name: u32, value: AttrValue) -> Result<()> {
        if let Some(l) = self.locations.get_mut(&location) {
            l.props.push((name, value));
        }
        Ok(())
    }
    fn region(&mut self, r: u32, def: &RegionDef) -> Result<()> {
        self.regions.insert(r, *def);
        Ok(())
    }
    fn group(&mut self, r: u32, name: u32, ty: u8, paradigm: u8, members: &[u64]) -> Result<()> {
        self.groups.insert(
            r,
            Group {
                name,
                ty,
                paradigm,
                members: members.to_vec(),
            },
        );
        Ok(())
    }
    fn comm(&mut self, r: u32, name: u32, group: u32, _parent: u32) -> Result<()> {
        self.comms.insert(r, (group, name));
        Ok(())
    }
    fn io_file(&mut self, r: u32, name: u32) -> Result<()> {
        self.io_files.insert(r, name);
        Ok(())
    }
    fn io_handle(&mut self, r: u32, name: u32, file: u32) -> Result<()> {
        self.io_handles.insert(r, (name, file));
        Ok(())
    }
    fn attribute(&mut self, r: u32, name: u32, description: u32, _ty: u8) -> Result<()> {
        self.attributes.insert(r, Attribute { name, description });
        Ok(())
    }
    fn metric_member(&mut self, r: u32, def: &MetricMemberDef) -> Result<()> {
        self.members.insert(r, *def);
        Ok(())
    }
    fn metric_class(&mut self, r: u32, members: &[u32]) -> Result<()> {
        self.classes.insert(r, members.to_vec());
        Ok(())
    }
    fn metric_instance(
        &mut self,
        r: u32,
        class: u32,
        _recorder: u64,
        scope_ty: u8,
        scope: u64,
    ) -> Result<()> {
        self.instances.insert(r, (class, scope_ty, scope));
        Ok(())
    }
    fn rma_win(&mut self, r: u32, _name: u32, comm: u32) -> Result<()> {
        self.windows.insert(r, comm);
        Ok(())
    }
    fn calling_context(&mut self, r: u32, region: u32, parent: u32) -> Result<()> {
        self.contexts.insert(r, (region, parent));
        Ok(())
    }
    fn parameter(&mut self, r: u32, name: u32, _ty: u8) -> Result<()> {
        self.parameters.insert(r, name);
        Ok(())
    }
}
