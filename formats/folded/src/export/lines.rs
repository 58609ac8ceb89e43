//! The stacks of the output: a private prefix tree over private frame names (the trace's own
//! definitions are read, never changed) and the writing of weighted lines, sorted and
//! deterministic.

use std::borrow::Cow;
use std::io::Write;

use rustc_hash::FxHashMap;
use tracex_ir::stack::StackTable;
use tracex_ir::strings::Interner;
use tracex_ir::{Defs, Diagnostics, Location, Result, StackId, StrId};

use crate::diag as d;

/// A frame name of the output, interned in its [`Tree`] (not a trace's [`StrId`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(StrId);

/// Output stacks as a prefix tree over the output's frame names.
#[derive(Default)]
pub struct Tree {
    table: StackTable,
    names: Interner,
    /// The output name of each trace string used as a frame, copied once.
    from_trace: FxHashMap<StrId, Name>,
}

impl Tree {
    /// The frame name `text`.
    pub fn name(&mut self, text: &str) -> Name {
        Name(self.names.intern(text))
    }

    /// The frame name of the trace's string `id`.
    pub fn trace_name(&mut self, defs: &Defs, id: StrId) -> Name {
        if let Some(&n) = self.from_trace.get(&id) {
            return n;
        }
        let n = self.name(defs.str(id));
        self.from_trace.insert(id, n);
        n
    }

    /// The node for frame `name` under `parent`.
    pub fn child(&mut self, parent: Option<StackId>, name: Name) -> StackId {
        let f = self.table.intern_frame(name.0, None);
        self.table.intern(parent, f)
    }

    /// `parent` extended by `names`, root first.
    pub fn extend(
        &mut self,
        parent: Option<StackId>,
        names: impl IntoIterator<Item = Name>,
    ) -> Option<StackId> {
        names
            .into_iter()
            .fold(parent, |p, n| Some(self.child(p, n)))
    }

    /// `parent` extended by the frame names of `stack` in the trace's table.
    pub fn extend_with_trace_stack(
        &mut self,
        defs: &Defs,
        parent: Option<StackId>,
        stack: StackId,
    ) -> Option<StackId> {
        let names: Vec<Name> = defs
            .stacks
            .path(stack)
            .into_iter()
            .map(|f| self.trace_name(defs, defs.stacks.frame(f).name))
            .collect();
        self.extend(parent, names)
    }

    /// The text of a frame name.
    pub fn text(&self, name: Name) -> &str {
        self.names.get(name.0)
    }

    fn names(&self, node: StackId) -> impl Iterator<Item = &str> + '_ {
        self.table
            .path(node)
            .into_iter()
            .map(|f| self.text(Name(self.table.frame(f).name)))
    }
}

/// Weights of output stacks: the count, and the first column of a differential file.
#[derive(Default)]
pub struct Weights {
    pub map: FxHashMap<StackId, (i64, i64)>,
    /// Write two columns (`before after`).
    pub differential: bool,
}

impl Weights {
    pub fn add(&mut self, node: StackId, w: i64) {
        self.map.entry(node).or_default().0 += w;
    }

    pub fn add_before(&mut self, node: StackId, w: i64) {
        self.map.entry(node).or_default().1 += w;
    }
}

/// A frame name that reads back as the same single frame.
fn sanitize(name: &str) -> Cow<'_, str> {
    if name.contains([';', '\n', '\r']) {
        Cow::Owned(name.replace(';', ":").replace(['\n', '\r'], " "))
    } else {
        Cow::Borrowed(name)
    }
}

/// What was written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub lines: u64,
    /// Sum of the (last) counts: the total a flame graph shows.
    pub total: i64,
}

/// Writes `stack count` (or `stack before after`) lines sorted by stack; stacks whose weights
/// are all zero are left out and counted.
pub fn write(
    tree: &Tree,
    weights: &Weights,
    diag: &mut Diagnostics,
    out: &mut dyn Write,
) -> Result<Written> {
    let mut renamed = 0u64;
    let mut zero = 0u64;
    let mut lines: Vec<(String, i64, i64)> = Vec::with_capacity(weights.map.len());
    for (&node, &(w, before)) in &weights.map {
        if w == 0 && (before == 0 || !weights.differential) {
            zero += 1;
            continue;
        }
        let mut text = String::new();
        for (i, name) in tree.names(node).enumerate() {
            if i > 0 {
                text.push(';');
            }
            let s = sanitize(name);
            if matches!(s, Cow::Owned(_)) {
                renamed += 1;
            }
            text.push_str(&s);
        }
        lines.push((text, w, before));
    }
    lines.sort_unstable();
    let mut written = Written::default();
    let mut buf = Vec::with_capacity(1 << 16);
    let mut num = itoa::Buffer::new();
    for (text, w, before) in &lines {
        buf.extend_from_slice(text.as_bytes());
        buf.push(b' ');
        if weights.differential {
            buf.extend_from_slice(num.format(*before).as_bytes());
            buf.push(b' ');
        }
        buf.extend_from_slice(num.format(*w).as_bytes());
        buf.push(b'\n');
        if buf.len() >= 1 << 16 {
            out.write_all(&buf)?;
            buf.clear();
        }
        written.lines += 1;
        written.total += w;
    }
    out.write_all(&buf)?;
    diag.record_n(
        &d::FRAME_RENAMED,
        renamed,
        Location::Nowhere,
        None::<String>,
    );
    diag.record_n(&d::ZERO_WEIGHT, zero, Location::Nowhere, None::<String>);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_summed_and_sanitized() {
        let mut diag = Diagnostics::default();
        let mut tree = Tree::default();
        let [main, b, a, odd] = ["main", "b", "a", "x;y\nz"].map(|s| tree.name(s));
        let mut w = Weights::default();
        let mb = tree.extend(None, [main, b]).unwrap();
        let ma = tree.extend(None, [main, a]).unwrap();
        let mo = tree.extend(None, [main, odd]).unwrap();
        let root = tree.child(None, main);
        w.add(mb, 2);
        w.add(ma, 1);
        w.add(mb, 3);
        w.add(mo, 1);
        w.add(root, 0);
        let mut out = Vec::new();
        let r = write(&tree, &w, &mut diag, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "main;a 1\nmain;b 5\nmain;x:y z 1\n"
        );
        assert_eq!(r, Written { lines: 3, total: 7 });
        assert_eq!(diag.count("folded_frame_renamed"), 1);
        assert_eq!(diag.count("folded_zero_weight"), 1);
    }
}
