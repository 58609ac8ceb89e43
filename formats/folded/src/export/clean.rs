//! Frame clean-up of the GPU flame graph, as the reference merge (eunomia-bpf
//! `merge_gpu_cpu_trace.py`) does it: frames are trimmed; empty frames, `_start`,
//! `__libc_start_main` and `<no-symbol>` are dropped; the first frame naming
//! `cudaLaunchKernel` or a `__device_stub__` becomes `cudaLaunchKernel` and later such frames
//! are dropped. The current upstream version (`--weight gpu-us`) keeps `__device_stub__` frames,
//! which name the kernel launched, and collapses only the `cudaLaunchKernel` ones.

use rustc_hash::FxHashMap;
use tracex_ir::{Defs, FrameId, StackId, StrId};

use super::lines::{Name, Tree};

/// The frame every launch variant becomes.
pub const LAUNCH_FRAME: &str = "cudaLaunchKernel";

const DEVICE_STUB: &str = "__device_stub__";

/// Which version of the reference's clean-up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cleaning {
    /// The original: a `__device_stub__` frame is a launch frame like `cudaLaunchKernel`.
    #[default]
    Original,
    /// The current upstream: `__device_stub__` frames are kept as they are.
    Upstream,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    Drop,
    Launch,
    /// A frame kept that marks the stack as caught at a launch (a kept `__device_stub__`).
    KeepLaunch(Name),
    Keep(Name),
}

fn rule(defs: &Defs, tree: &mut Tree, name: StrId, cleaning: Cleaning) -> Rule {
    let text = defs.str(name);
    let t = text.trim();
    let keep = |tree: &mut Tree| {
        if t.len() == text.len() {
            tree.trace_name(defs, name)
        } else {
            tree.name(t)
        }
    };
    let stub = t.contains(DEVICE_STUB);
    if t.is_empty() || matches!(t, "_start" | "__libc_start_main" | "<no-symbol>") {
        Rule::Drop
    } else if stub && cleaning == Cleaning::Upstream {
        Rule::KeepLaunch(keep(tree))
    } else if t.contains(LAUNCH_FRAME) || stub {
        Rule::Launch
    } else {
        Rule::Keep(keep(tree))
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
    cleaning: Cleaning,
    frames: FxHashMap<FrameId, Rule>,
    stacks: FxHashMap<StackId, u32>,
    cleaned: Vec<Cleaned>,
}

impl Cleaner {
    pub fn new(cleaning: Cleaning) -> Self {
        Cleaner {
            cleaning,
            ..Cleaner::default()
        }
    }

    /// The index of the cleaned form of `stack` (see [`Cleaner::get`]).
    pub fn clean(&mut self, defs: &Defs, tree: &mut Tree, stack: StackId) -> u32 {
        if let Some(&i) = self.stacks.get(&stack) {
            return i;
        }
        let mut out = Cleaned {
            frames: Vec::new(),
            launch: false,
        };
        // whether a launch frame was written: later ones are dropped
        let mut collapsed = false;
        for f in defs.stacks.path(stack) {
            let r = match self.frames.get(&f) {
                Some(&r) => r,
                None => {
                    let r = rule(defs, tree, defs.stacks.frame(f).name, self.cleaning);
                    self.frames.insert(f, r);
                    r
                }
            };
            match r {
                Rule::Drop => {}
                Rule::Launch if collapsed => {}
                Rule::Launch => {
                    collapsed = true;
                    out.launch = true;
                    out.frames.push(tree.name(LAUNCH_FRAME));
                }
                Rule::KeepLaunch(n) => {
                    out.launch = true;
                    out.frames.push(n);
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
    fn as_the_upstream_merge_keeping_device_stubs() {
        let mut b = TraceBuilder::new();
        let stub = "__device_stub__Z13matmul_kernelPfS_S_ii(float*, float*, float*, int, int)";
        let s = b
            .stack(&["main", stub, "cudaLaunchKernel", "cudaLaunchKernel_ptsz"])
            .unwrap();
        let only_stub = b.stack(&["main", stub]).unwrap();
        let defs = b.finish().defs;
        let mut tree = Tree::default();
        let mut c = Cleaner::new(Cleaning::Upstream);
        let i = c.clean(&defs, &mut tree, s);
        assert!(c.get(i).launch);
        assert_eq!(names(&tree, c.get(i)), ["main", stub, "cudaLaunchKernel"]);
        let j = c.clean(&defs, &mut tree, only_stub);
        assert!(c.get(j).launch);
        assert_eq!(names(&tree, c.get(j)), ["main", stub]);
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
