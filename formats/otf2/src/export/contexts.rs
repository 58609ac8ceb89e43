//! IR call stacks → OTF2 calling contexts: each stack node is a calling context whose region is
//! its frame (name, with the module as the region's category) and whose parent is the node's
//! parent. Used by stack samples (CallingContextSample) and by the stacks of slices and instants
//! (a `tracex:stack` attribute).

use otf2_sys as sys;
use rustc_hash::FxHashMap;
use tracex_ir::{Defs, StackId};

use super::regions::Regions;
use super::strings::Strings;
use crate::ffi::{ArchiveWriter, Result};

#[derive(Default)]
pub struct Contexts {
    by_stack: FxHashMap<StackId, u32>,
    /// (region, parent) of each calling context, parents first.
    list: Vec<(sys::OTF2_RegionRef, sys::OTF2_CallingContextRef)>,
    /// Whether a sample was written (they refer to one interrupt generator).
    pub sampled: bool,
}

impl Contexts {
    pub fn get(
        &mut self,
        ar: &mut ArchiveWriter,
        strings: &mut Strings,
        regions: &mut Regions,
        defs: &Defs,
        stack: StackId,
    ) -> Result<sys::OTF2_CallingContextRef> {
        if let Some(&c) = self.by_stack.get(&stack) {
            return Ok(sys::OTF2_CallingContextRef(c));
        }
        // The nodes not defined yet, leaf first; stop at a cycle (a malformed input).
        let mut chain = Vec::new();
        let mut cur = Some(stack);
        while let Some(s) = cur {
            if self.by_stack.contains_key(&s) || chain.contains(&s) {
                break;
            }
            chain.push(s);
            cur = defs.stacks.node(s).and_then(|n| n.parent);
        }
        let mut parent = cur.and_then(|p| self.by_stack.get(&p).copied()).map_or(
            sys::OTF2_UNDEFINED_CALLING_CONTEXT,
            sys::OTF2_CallingContextRef,
        );
        for s in chain.into_iter().rev() {
            let region = match defs.stacks.node(s) {
                Some(n) => {
                    let f = defs.stacks.frame(n.frame);
                    regions.get(ar, strings, defs, f.name, f.module, false)?
                }
                // A node reserved and never defined (D1 says importers define them).
                None => regions.undefined_frame(ar, strings)?,
            };
            let c = self.list.len() as u32;
            self.list.push((region, parent));
            self.by_stack.insert(s, c);
            parent = sys::OTF2_CallingContextRef(c);
        }
        Ok(parent)
    }

    pub fn write_defs(&self, ar: &mut ArchiveWriter, strings: &mut Strings) -> Result<()> {
        for (i, (region, parent)) in self.list.iter().enumerate() {
            ar.global_defs()?.calling_context(
                sys::OTF2_CallingContextRef(i as u32),
                *region,
                *parent,
            )?;
        }
        if self.sampled {
            let name = strings.name(ar, "tracex samples")?;
            ar.global_defs()?
                .interrupt_generator(sys::OTF2_InterruptGeneratorRef(0), name)?;
        }
        Ok(())
    }
}
