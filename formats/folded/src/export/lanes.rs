//! The slices open on each lane (a strict track, or one overflow lane of it), as the ordered
//! stream reaches the exporter: they give timeline stacks with their self time, and the slice a
//! flow point binds to.
//!
//! A lane is its own stack root: a slice that the overlap router moved to an overflow lane is
//! not nested under the slices of the lane it overlapped, so no stack is ever made of two
//! slices that did not nest.

use rustc_hash::FxHashMap;
use tracex_ir::kind::SliceKind;
use tracex_ir::{StackId, StrId, TrackId};

use super::lines::{Name, Tree};

/// What an open slice is to the GPU join; ids are registered on first use.
#[derive(Clone, Copy, Debug)]
pub enum Role {
    Other,
    /// A CUDA API call.
    Api {
        name: StrId,
        stack: Option<StackId>,
        call: Option<u32>,
    },
    /// A kernel, copy or set on a GPU.
    Gpu {
        name: StrId,
        dur: i64,
        kind: SliceKind,
        work: Option<u32>,
        /// Its correlation id, from its args.
        correlation: Option<u64>,
    },
}

#[derive(Debug)]
pub struct Open {
    pub start: i64,
    /// `i64::MAX` for a slice that never ended.
    pub end: i64,
    /// Its timeline stack (none where no timeline is made).
    node: Option<StackId>,
    /// Time covered by the slices nested directly in this one.
    child: i64,
    pub role: Role,
}

/// Per-stack self time in ns and number of calls.
pub type SelfTimes = FxHashMap<StackId, (i64, i64)>;

#[derive(Default)]
pub struct Lanes {
    lanes: FxHashMap<TrackId, Vec<Open>>,
    /// The lanes of each root track, in the order they appeared.
    of_root: FxHashMap<TrackId, Vec<TrackId>>,
    pub self_time: SelfTimes,
    /// Slices that never ended and were closed at the end of the trace.
    pub closed_open: u64,
}

fn account(o: &Open, end: i64, parent: Option<&mut Open>, self_time: &mut SelfTimes) {
    let dur = end.saturating_sub(o.start);
    if let Some(node) = o.node {
        let e = self_time.entry(node).or_default();
        e.0 += (dur - o.child).max(0);
        e.1 += 1;
    }
    if let Some(p) = parent {
        p.child += dur;
    }
}

fn pop_ended(lane: &mut Vec<Open>, ts: i64, self_time: &mut SelfTimes) {
    while lane.last().is_some_and(|o| o.end <= ts) {
        let o = lane.pop().expect("checked");
        account(&o, o.end, lane.last_mut(), self_time);
    }
}

impl Lanes {
    /// Opens a slice `[start, end)` named `name` on `lane` (of `root`); the stack of a slice
    /// that is not nested in another starts at `base`. Without a name, the slice makes no
    /// timeline stack and only binds flows. Returns the open slice.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        lane: TrackId,
        root: TrackId,
        start: i64,
        end: i64,
        name: Option<Name>,
        tree: &mut Tree,
        base: Option<StackId>,
        role: Role,
    ) -> &mut Open {
        let open = self.lanes.entry(lane).or_insert_with(|| {
            self.of_root.entry(root).or_default().push(lane);
            Vec::new()
        });
        pop_ended(open, start, &mut self.self_time);
        let node = name.map(|name| {
            let parent = open.last().map_or(base, |o| o.node);
            tree.child(parent, name)
        });
        open.push(Open {
            start,
            end,
            node,
            child: 0,
            role,
        });
        open.last_mut().expect("just pushed")
    }

    /// The open slice of `root`'s lanes that a flow point at `ts` binds to: of the slices that
    /// contain `ts`, the latest-starting; among those starting at the same time, the one `rank`
    /// prefers, then the innermost. (Equal starts happen when an input rounds times: CUPTI
    /// JSON's µs floats can give a launch and the call after it one start.)
    pub fn enclosing(
        &mut self,
        root: TrackId,
        ts: i64,
        rank: impl Fn(&Role) -> u8,
    ) -> Option<&mut Open> {
        let (lane, i) = self.pick(self.of_root.get(&root)?, ts, rank)?;
        self.lanes.get_mut(&lane).map(|v| &mut v[i])
    }

    /// The open slice a flow point at `ts` on `lane` is bound to, the flow binder having put
    /// the point on its slice's lane: as [`Lanes::enclosing`], on that lane only.
    pub fn bound(
        &mut self,
        lane: TrackId,
        ts: i64,
        rank: impl Fn(&Role) -> u8,
    ) -> Option<&mut Open> {
        let (lane, i) = self.pick(&[lane], ts, rank)?;
        self.lanes.get_mut(&lane).map(|v| &mut v[i])
    }

    fn pick(
        &self,
        lanes: &[TrackId],
        ts: i64,
        rank: impl Fn(&Role) -> u8,
    ) -> Option<(TrackId, usize)> {
        let mut best: Option<((i64, u8, usize), TrackId, usize)> = None;
        for &lane in lanes {
            for (i, o) in self.lanes.get(&lane).into_iter().flatten().enumerate() {
                let key = (o.start, rank(&o.role), i);
                if o.start <= ts && ts <= o.end && best.is_none_or(|(k, _, _)| key > k) {
                    best = Some((key, lane, i));
                }
            }
        }
        best.map(|(_, lane, i)| (lane, i))
    }

    /// The backtrace of the innermost CUDA call of `root`'s lanes that contains `ts` and has
    /// one: a call without its own (nsys records one for the outer of two nested rows of the
    /// same launch, and none for driver calls inside runtime calls) runs on that stack.
    pub fn call_stack_at(&self, root: TrackId, ts: i64) -> Option<StackId> {
        let mut best: Option<(i64, StackId)> = None;
        for lane in self.of_root.get(&root)? {
            for o in &self.lanes[lane] {
                if let Role::Api {
                    stack: Some(stack), ..
                } = o.role
                {
                    if o.start <= ts && ts <= o.end && best.is_none_or(|(s, _)| o.start >= s) {
                        best = Some((o.start, stack));
                    }
                }
            }
        }
        best.map(|(_, s)| s)
    }

    /// Closes every slice still open; those that never ended close at `trace_end`.
    pub fn close_all(&mut self, trace_end: i64) {
        for open in self.lanes.values_mut() {
            while let Some(o) = open.pop() {
                let end = if o.end == i64::MAX {
                    self.closed_open += 1;
                    trace_end.max(o.start)
                } else {
                    o.end
                };
                account(&o, end, open.last_mut(), &mut self.self_time);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracex_ir::Defs;

    #[test]
    fn self_time_and_binding() {
        let mut tree = Tree::default();
        let mut lanes = Lanes::default();
        let (t, o1) = (TrackId(0), TrackId(1));
        let [main, work, leaf, spill] = ["main", "work", "leaf", "spill"].map(|s| tree.name(s));
        // main [0,100) > work [10,50) > leaf [20,30); spill [40,60) on an overflow lane
        lanes.push(t, t, 0, 100, Some(main), &mut tree, None, Role::Other);
        lanes.push(t, t, 10, 50, Some(work), &mut tree, None, Role::Other);
        lanes.push(t, t, 20, 30, Some(leaf), &mut tree, None, Role::Other);
        lanes.push(o1, t, 40, 60, Some(spill), &mut tree, None, Role::Other);
        let any = |_: &Role| 0;
        assert_eq!(lanes.enclosing(t, 25, any).unwrap().start, 20);
        assert_eq!(lanes.enclosing(t, 45, any).unwrap().start, 40);
        assert_eq!(lanes.enclosing(t, 70, any).unwrap().start, 0);
        assert!(lanes.enclosing(t, 200, any).is_none());
        lanes.close_all(1000);
        let mut get = |names: &[Name]| {
            let node = tree.extend(None, names.iter().copied()).unwrap();
            lanes.self_time[&node]
        };
        assert_eq!(get(&[main]), (60, 1));
        assert_eq!(get(&[main, work]), (30, 1));
        assert_eq!(get(&[main, work, leaf]), (10, 1));
        // the overflow lane is its own root: never main;work;spill
        assert_eq!(get(&[spill]), (20, 1));
        assert_eq!(lanes.closed_open, 0);
    }

    /// Slices opened without a name (no timeline asked for) bind flows as named ones do, and
    /// make no stack and no self time.
    #[test]
    fn nameless_slices_only_bind() {
        let mut tree = Tree::default();
        let mut lanes = Lanes::default();
        let t = TrackId(0);
        lanes.push(t, t, 0, 100, None, &mut tree, None, Role::Other);
        lanes.push(t, t, 10, 50, None, &mut tree, None, Role::Other);
        assert_eq!(lanes.enclosing(t, 25, |_| 0).unwrap().start, 10);
        assert_eq!(lanes.enclosing(t, 70, |_| 0).unwrap().start, 0);
        lanes.close_all(1000);
        assert!(lanes.self_time.is_empty());
        assert_eq!(tree.nodes(), 0);
    }

    #[test]
    fn equal_starts_bind_by_rank_then_innermost() {
        let mut defs = Defs::new();
        let mut tree = Tree::default();
        let mut lanes = Lanes::default();
        let t = TrackId(0);
        let [launch, check] = ["launch", "check"].map(|s| defs.intern(s));
        let [launch_frame, check_frame] = ["launch", "check"].map(|s| tree.name(s));
        let api = |name| Role::Api {
            name,
            stack: None,
            call: None,
        };
        lanes.push(
            t,
            t,
            100,
            200,
            Some(launch_frame),
            &mut tree,
            None,
            api(launch),
        );
        lanes.push(
            t,
            t,
            100,
            120,
            Some(check_frame),
            &mut tree,
            None,
            Role::Other,
        );
        let name = |o: &Open| match o.role {
            Role::Api { name, .. } => name,
            _ => check,
        };
        assert_eq!(name(lanes.enclosing(t, 100, |_| 0).unwrap()), check);
        let prefer_api = |r: &Role| matches!(r, Role::Api { .. }) as u8;
        assert_eq!(name(lanes.enclosing(t, 100, prefer_api).unwrap()), launch);
    }
}
