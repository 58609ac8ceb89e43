//! Frame clean-up of the GPU flame graph, as the reference merge (eunomia-bpf
//! `merge_gpu_cpu_trace.py`) does it: frames are trimmed; empty frames, `_start`,
//! `__libc_start_main` and `<no-symbol>` are dropped; the first frame naming
//! `cudaLaunchKernel` or a `__device_stub__` becomes `cudaLaunchKernel` and later such frames
//! are dropped.

use rustc_hash::FxHashMap;
use tracex_ir::{Defs, FrameId, StackId, StrId};

use super::lines::{Name, Tree};

/// The frame every launch variant becomes.
pub const LAUNCH_FRAME: &str = "cudaLaunchKernel";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    Drop,
    Launch,
    Keep(Name),
}

fn rule(defs: &Defs, tree: &mut Tree, name: StrId) -> Rule {
    let text = defs.str(name);
    let t = text.trim();
    if t.is_empty() || matches!(t, "_start" | "__libc_start_main" | "<no-symbol>") {
        Rule::Drop
    } else if t.contains(LAUNCH_FRAME) || t.contains("__device_stub__") {
        Rule::Launch
    } else if t.len() == text.len() {
        Rule::Keep(tree.trace_name(defs, name))
    } else {
        Rule::Keep(tree.name(t))
    }
}

/// A cleaned stack: frame names root first, and whether it had a launch frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cleaned {
    pub frames: Vec<Name>,
    pub launch: bool,
}

/// Cleans stacks, remembering each frame's and each stack's result.
#[derive(Default)]
pub struct Cleaner {
    frames: FxHashMap<FrameId, Rule>,
    stacks: FxHashMap<StackId, u32>,
    cleaned: Vec<Cleaned>,
}

impl Cleaner {
    /// The index of the cleaned form of `stack` (see [`Cleaner::get`]).
    pub fn clean(&mut self, defs: &Defs, tree: &mut Tree, stack: StackId) -> u32 {
        if let Some(&i) = self.stacks.get(&stack) {
            return i;
        }
        let mut out = Cleaned {
            frames: Vec::new(),
            launch: false,
        };
        for f in defs.stacks.path(stack) {
            let r = match self.frames.get(&f) {
                Some(&r) => r,
                None => {
                    let r = rule(defs, tree, defs.stacks.frame(f).name);
                    self.frames.insert(f, r);
                    r
                }
            };
            match r {
                Rule::Drop => {}
                Rule::Launch if out.launch => {}
                Rule::Launch => {
                    out.launch = true;
                    out.frames.push(tree.name(LAUNCH_FRAME));
                }
                Rule::Keep(n) => out.frames.push(n),
            }
        }
        let i = self.cleaned.len() as u32;
        self.cleaned.push(out);
        self.stacks.insert(stack, i);
        i
    }

    pub fn get(&self, i: u32) -> &Cleaned {
        &self.cleaned[i as usize]
    }
}

/// The frame an API call adds to a backtrace: its name without the `_vNNNN` version suffix
/// CUPTI appends, every launch variant as `cudaLaunchKernel`.
pub fn api_frame(name: &str) -> &str {
    if name.contains(LAUNCH_FRAME) {
        return LAUNCH_FRAME;
    }
    match name.rfind("_v") {
        Some(i) if i + 2 < name.len() && name[i + 2..].bytes().all(|b| b.is_ascii_digit()) => {
            &name[..i]
        }
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracex_ir::builder::TraceBuilder;

    fn names(tree: &Tree, c: &Cleaned) -> Vec<String> {
        c.frames.iter().map(|&f| tree.text(f).to_string()).collect()
    }

    #[test]
    fn as_the_reference_merge() {
        let mut b = TraceBuilder::new();
        let s = b
            .stack(&[
                "_start",
                "__libc_start_main",
                "<no-symbol>",
                " main ",
                "",
                "forward(Transformer*, int)",
                "__device_stub__Z13matmul_kernelPfS_S_ii(...)",
                "cudaLaunchKernel",
                "libcudart.so+0x1234",
            ])
            .unwrap();
        let plain = b.stack(&["_start", "main", "compute"]).unwrap();
        let defs = b.finish().defs;
        let mut tree = Tree::default();
        let mut c = Cleaner::default();
        let i = c.clean(&defs, &mut tree, s);
        assert_eq!(c.clean(&defs, &mut tree, s), i);
        let got = c.get(i).clone();
        assert!(got.launch);
        assert_eq!(
            names(&tree, &got),
            [
                "main",
                "forward(Transformer*, int)",
                "cudaLaunchKernel",
                "libcudart.so+0x1234"
            ]
        );
        let j = c.clean(&defs, &mut tree, plain);
        assert!(!c.get(j).launch);
        assert_eq!(names(&tree, c.get(j)), ["main", "compute"]);
    }

    #[test]
    fn api_frames() {
        assert_eq!(api_frame("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(api_frame("cudaMemcpyAsync_v3020"), "cudaMemcpyAsync");
        assert_eq!(api_frame("cuLaunchKernel"), "cuLaunchKernel");
        assert_eq!(api_frame("cuCtxCreate_v2"), "cuCtxCreate");
        assert_eq!(api_frame("my_v"), "my_v");
    }
}
