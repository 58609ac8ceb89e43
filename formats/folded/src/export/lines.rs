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

    /// How many nodes (stacks) the tree has.
    #[cfg(test)]
    pub fn nodes(&self) -> usize {
        self.table.len()
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
}

/// Weights of output stacks: the count, and the first column of a differential file.
#[derive(Default)]
pub struct Weights {
    pub map: FxHashMap<StackId, (i64, i64)>,
    /// Write two columns (`before after`).
    pub differential: bool,
    /// Write stacks whose weight is zero too, as the upstream merge's GPU-µs view does (a
    /// kernel shorter than a microsecond adds 0 to its stack's line).
    pub keep_zero: bool,
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

/// Written instead of a `#` that would begin a line: the fullwidth number sign.
const COMMENT_LOOKALIKE: char = '\u{ff03}';

/// The text of a frame in a line: sanitized, and a root frame never begins with `#`, which
/// starts a comment for every folded reader (inferno, flamegraph.pl, tracex).
fn frame_text(name: &str, root: bool) -> Cow<'_, str> {
    let s = sanitize(name);
    match s.strip_prefix('#') {
        Some(rest) if root => Cow::Owned(format!("{COMMENT_LOOKALIKE}{rest}")),
        _ => s,
    }
}

/// What was written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub lines: u64,
    /// Sum of the (last) counts: the total a flame graph shows.
    pub total: i64,
}

/// One entry among a node's children in output order: the line of the child itself, or the
/// lines below it (all of which start with `child;`).
#[derive(Clone, Copy)]
enum Block {
    Line(u32),
    Below(u32),
}

/// The byte strings `a` + (`;` if `a_semi`) and `b` + (`;` if `b_semi`), compared.
fn cmp_keys(a: &[u8], a_semi: bool, b: &[u8], b_semi: bool) -> std::cmp::Ordering {
    let a = a.iter().chain(if a_semi { &b";"[..] } else { &[] });
    let b = b.iter().chain(if b_semi { &b";"[..] } else { &[] });
    a.cmp(b)
}

/// Writes `stack count` (or `stack before after`) lines sorted by stack text; stacks whose
/// weights are all zero are left out and counted, unless [`Weights::keep_zero`].
///
/// The lines are made while walking the tree, never held together: memory is the tree plus
/// one line, so a trace nested N deep costs O(N), not the O(N²) of its N lines. The walk gives
/// exactly the byte order of the joined texts: among siblings, the line `C` sorts by the key
/// `C` and the lines below `C` (all `C;...`, frame names hold no `;`) by the key `C;`.
pub fn write(
    tree: &Tree,
    weights: &Weights,
    diag: &mut Diagnostics,
    out: &mut dyn Write,
) -> Result<Written> {
    let table = &tree.table;
    let n = table.len();
    let mut zero = 0u64;
    // What each node holds: its own line, lines below it.
    let mut has_line = vec![false; n];
    let mut has_below = vec![false; n];
    for (&node, &(w, before)) in &weights.map {
        if w == 0 && (before == 0 || !weights.differential) && !weights.keep_zero {
            zero += 1;
            continue;
        }
        has_line[node.index()] = true;
        let mut cur = table.node(node).and_then(|s| s.parent);
        while let Some(p) = cur {
            if std::mem::replace(&mut has_below[p.index()], true) {
                break;
            }
            cur = table.node(p).and_then(|s| s.parent);
        }
    }
    // Children of each node that leads to a line (index n: the roots), as lists in one array.
    let parent_slot = |i: usize| match table.node(StackId(i as u32)).and_then(|s| s.parent) {
        Some(p) => p.index(),
        None => n,
    };
    let mut start = vec![0u32; n + 2];
    for i in (0..n).filter(|&i| has_line[i] || has_below[i]) {
        start[parent_slot(i) + 1] += 1;
    }
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    let mut fill = start.clone();
    let mut children = vec![0u32; start[n + 1] as usize];
    for i in (0..n).filter(|&i| has_line[i] || has_below[i]) {
        let slot = &mut fill[parent_slot(i)];
        children[*slot as usize] = i as u32;
        *slot += 1;
    }
    let name_of = |i: u32| {
        let node = table.node(StackId(i)).expect("defined");
        frame_text(
            tree.text(Name(table.frame(node.frame).name)),
            node.parent.is_none(),
        )
    };
    let blocks = |slot: usize| -> Vec<Block> {
        let kids = &children[start[slot] as usize..start[slot + 1] as usize];
        let mut v: Vec<Block> = Vec::with_capacity(kids.len() * 2);
        for &k in kids {
            if has_line[k as usize] {
                v.push(Block::Line(k));
            }
            if has_below[k as usize] {
                v.push(Block::Below(k));
            }
        }
        let key = |b: &Block| match *b {
            Block::Line(k) => (name_of(k), false),
            Block::Below(k) => (name_of(k), true),
        };
        v.sort_by(|x, y| {
            let ((a, asemi), (b, bsemi)) = (key(x), key(y));
            cmp_keys(a.as_bytes(), asemi, b.as_bytes(), bsemi)
        });
        // reversed: the walk pops from the end
        v.reverse();
        v
    };

    let mut renamed = 0u64;
    let mut written = Written::default();
    let mut buf = Vec::with_capacity(1 << 16);
    // The path being walked: its text, and per level (blocks left, text length, renamed frames).
    let mut path: Vec<u8> = Vec::new();
    let mut stack: Vec<(Vec<Block>, usize, u64)> = vec![(blocks(n), 0, 0)];
    while let Some((todo, _, _)) = stack.last_mut() {
        let Some(b) = todo.pop() else {
            let (_, len, _) = stack.pop().expect("non-empty");
            path.truncate(len);
            continue;
        };
        let renamed_above = stack.last().map_or(0, |l| l.2);
        match b {
            Block::Line(k) => {
                let name = name_of(k);
                renamed += renamed_above + matches!(name, Cow::Owned(_)) as u64;
                let (w, before) = weights.map[&StackId(k)];
                buf.extend_from_slice(&path);
                buf.extend_from_slice(name.as_bytes());
                buf.push(b' ');
                if weights.differential {
                    tracex_ir::decimal::push(&mut buf, before);
                    buf.push(b' ');
                }
                tracex_ir::decimal::push(&mut buf, w);
                buf.push(b'\n');
                if buf.len() >= 1 << 16 {
                    out.write_all(&buf)?;
                    buf.clear();
                }
                written.lines += 1;
                written.total += w;
            }
            Block::Below(k) => {
                let name = name_of(k);
                let here = renamed_above + matches!(name, Cow::Owned(_)) as u64;
                let len = path.len();
                path.extend_from_slice(name.as_bytes());
                path.push(b';');
                stack.push((blocks(k as usize), len, here));
            }
        }
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

    #[test]
    fn a_line_never_begins_with_a_comment_sign() {
        let mut diag = Diagnostics::default();
        let mut tree = Tree::default();
        let [hash, b] = ["# TensorsToDeviceModule #", "#b"].map(|s| tree.name(s));
        let mut w = Weights::default();
        w.add(tree.extend(None, [hash, b]).unwrap(), 412_507);
        let mut out = Vec::new();
        write(&tree, &w, &mut diag, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, "\u{ff03} TensorsToDeviceModule #;#b 412507\n");
        assert!(!text.starts_with('#'));
        assert_eq!(diag.count("folded_frame_renamed"), 1);
    }
}
