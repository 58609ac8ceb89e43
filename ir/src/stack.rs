//! Call stacks as a prefix tree: each node is (parent, frame), so a sample or slice stores one
//! [`StackId`] and shared prefixes are stored once.

use indexmap::IndexSet;
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::model::{Frame, FrameId, StackId};
use crate::strings::StrId;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StackNode {
    pub parent: Option<StackId>,
    pub frame: FrameId,
}

#[derive(Clone, Debug, Default)]
pub struct StackTable {
    frames: IndexSet<Frame, FxBuildHasher>,
    nodes: Vec<Option<StackNode>>,
    index: FxHashMap<StackNode, StackId>,
    /// Reserved nodes defined so far, in order (for copies kept on other threads).
    defined: Vec<u32>,
}

impl StackTable {
    pub fn intern_frame(&mut self, name: StrId, module: Option<StrId>) -> FrameId {
        let (i, _) = self.frames.insert_full(Frame { name, module });
        FrameId(i as u32)
    }

    pub fn frame(&self, id: FrameId) -> Frame {
        self.frames[id.index()]
    }

    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// The node for `frame` called from `parent`, shared with every other stack with that prefix.
    pub fn intern(&mut self, parent: Option<StackId>, frame: FrameId) -> StackId {
        let node = StackNode { parent, frame };
        if let Some(&id) = self.index.get(&node) {
            return id;
        }
        let id = StackId(self.nodes.len() as u32);
        self.nodes.push(Some(node));
        self.index.insert(node, id);
        id
    }

    /// The stack of `frames` given root first; `None` for an empty list.
    pub fn intern_path(&mut self, frames: impl IntoIterator<Item = FrameId>) -> Option<StackId> {
        let mut cur = None;
        for f in frames {
            cur = Some(self.intern(cur, f));
        }
        cur
    }

    /// A node whose frame and parent are given later with [`StackTable::define`]: for inputs that
    /// refer to stack ids before defining them (Chrome `sf` before `stackFrames`).
    pub fn reserve(&mut self) -> StackId {
        let id = StackId(self.nodes.len() as u32);
        self.nodes.push(None);
        id
    }

    /// Defines a reserved node. Reserved nodes are not shared with interned ones.
    pub fn define(&mut self, id: StackId, parent: Option<StackId>, frame: FrameId) {
        self.nodes[id.index()] = Some(StackNode { parent, frame });
        self.defined.push(id.0);
    }

    /// Frames from number `from` on.
    pub(crate) fn frames_from(&self, from: usize) -> impl Iterator<Item = Frame> + '_ {
        self.frames.iter().skip(from).copied()
    }

    /// Nodes from number `from` on, reserved ones as `None`.
    pub(crate) fn nodes_from(&self, from: usize) -> &[Option<StackNode>] {
        self.nodes.get(from..).unwrap_or(&[])
    }

    /// Reserved nodes defined, in order.
    pub(crate) fn defined(&self) -> &[u32] {
        &self.defined
    }

    /// Sets node `id` of a copy as the original has it (appending when `id` is the next one).
    /// The copy is only read: its index for sharing prefixes is left alone.
    pub(crate) fn set_copied(&mut self, id: u32, node: Option<StackNode>) {
        let i = id as usize;
        if i == self.nodes.len() {
            self.nodes.push(node);
        } else {
            self.nodes[i] = node;
        }
    }

    /// The node, or `None` if it was reserved and never defined.
    pub fn node(&self, id: StackId) -> Option<StackNode> {
        self.nodes.get(id.index()).copied().flatten()
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Frames of `id` from the root down to `id`'s own frame. Stops at an undefined node, and at a
    /// cycle (which a malformed input could make through reserved nodes).
    pub fn path(&self, id: StackId) -> Vec<FrameId> {
        let mut out = Vec::new();
        let mut cur = Some(id);
        while let Some(s) = cur {
            if out.len() > self.nodes.len() {
                break;
            }
            match self.node(s) {
                Some(n) => {
                    out.push(n.frame);
                    cur = n.parent;
                }
                None => break,
            }
        }
        out.reverse();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_prefixes() {
        let mut t = StackTable::default();
        let main = t.intern_frame(StrId(1), None);
        let a = t.intern_frame(StrId(2), None);
        let b = t.intern_frame(StrId(3), None);
        let s1 = t.intern_path([main, a]).unwrap();
        let s2 = t.intern_path([main, b]).unwrap();
        assert_eq!(t.node(s1).unwrap().parent, t.node(s2).unwrap().parent);
        assert_eq!(t.path(s2), vec![main, b]);
        assert_eq!(t.len(), 3);
        assert_eq!(t.intern_path([]), None);
    }

    #[test]
    fn reserved_then_defined() {
        let mut t = StackTable::default();
        let leaf = t.reserve();
        let root = t.reserve();
        let f = t.intern_frame(StrId(1), None);
        let g = t.intern_frame(StrId(2), Some(StrId(3)));
        t.define(leaf, Some(root), g);
        assert_eq!(t.path(leaf), vec![g]);
        t.define(root, None, f);
        assert_eq!(t.path(leaf), vec![f, g]);
        // a cycle does not hang
        t.define(root, Some(leaf), f);
        assert!(t.path(leaf).len() <= 4);
    }
}
