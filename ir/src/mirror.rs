//! A copy of a [`Defs`] kept up to date on another thread, for a sink that runs there
//! ([`crate::threaded`]): the thread that owns the definitions hands over, between two events,
//! what changed since it last looked ([`Delta`]), and the copy applies it before the next
//! event. Strings, frames and stack nodes are only appended, so a delta carries the new ones;
//! processes, threads and tracks may also change in place (names, metadata), which `Defs` logs
//! by index, so a delta carries those entries again. Ids in the copy are the ids of the
//! original.

use crate::defs::Defs;
use crate::model::{Args, Clock, CounterDef, Frame, Process, Thread, Track, TrackId};
use crate::stack::StackNode;

/// How much of a `Defs` a copy has: the length of every table and of every change log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Seen {
    strings: usize,
    processes: usize,
    threads: usize,
    tracks: usize,
    counters: usize,
    frames: usize,
    nodes: usize,
    defined: usize,
    changed: (usize, usize, usize),
    meta: (usize, u64),
    clock: Clock,
    global_track: Option<TrackId>,
}

impl Seen {
    /// Where `defs` stands now: comparing two tells whether anything changed, in a few loads.
    pub fn of(defs: &Defs) -> Seen {
        let c = &defs.changes;
        Seen {
            strings: defs.strings.len(),
            processes: defs.processes.len(),
            threads: defs.threads.len(),
            tracks: defs.tracks.len(),
            counters: defs.counters.len(),
            frames: defs.stacks.frame_count(),
            nodes: defs.stacks.len(),
            defined: defs.stacks.defined().len(),
            changed: (c.processes.len(), c.threads.len(), c.tracks.len()),
            meta: (defs.meta.len(), c.meta),
            clock: defs.clock.clone(),
            global_track: defs.global_track_id(),
        }
    }
}

/// What changed in a `Defs` between two looks.
#[derive(Debug, Default)]
pub struct Delta {
    strings: Vec<Box<str>>,
    /// New or changed entries, by index.
    processes: Vec<(u32, Process)>,
    threads: Vec<(u32, Thread)>,
    tracks: Vec<(u32, Track)>,
    counters: Vec<(u32, CounterDef)>,
    frames: Vec<Frame>,
    nodes: Vec<(u32, Option<StackNode>)>,
    meta: Option<Args>,
    clock: Clock,
    global_track: Option<TrackId>,
}

/// Entries `seen..` of `table`, then the entries whose indexes `changed` lists (below `seen`:
/// the new ones are sent anyway), each once.
fn entries<T: Clone>(table: &[T], seen: usize, changed: &[u32]) -> Vec<(u32, T)> {
    let mut again: Vec<u32> = changed
        .iter()
        .copied()
        .filter(|&i| (i as usize) < seen)
        .collect();
    again.sort_unstable();
    again.dedup();
    let again = again.into_iter().map(|i| (i, table[i as usize].clone()));
    let new = (seen..table.len()).map(|i| (i as u32, table[i].clone()));
    again.chain(new).collect()
}

impl Defs {
    /// Everything that changed since `seen`, which moves to now; `None` when nothing did.
    pub fn delta_since(&self, seen: &mut Seen) -> Option<Delta> {
        let now = Seen::of(self);
        if now == *seen {
            return None;
        }
        let c = &self.changes;
        let delta = Delta {
            strings: (seen.strings..now.strings)
                .map(|i| Box::from(self.strings.get(crate::StrId(i as u32))))
                .collect(),
            processes: entries(
                &self.processes,
                seen.processes,
                &c.processes[seen.changed.0..],
            ),
            threads: entries(&self.threads, seen.threads, &c.threads[seen.changed.1..]),
            tracks: entries(&self.tracks, seen.tracks, &c.tracks[seen.changed.2..]),
            counters: entries(&self.counters, seen.counters, &[]),
            frames: self.stacks.frames_from(seen.frames).collect(),
            nodes: {
                let redefined = self.stacks.defined()[seen.defined..]
                    .iter()
                    .filter(|&&i| (i as usize) < seen.nodes)
                    .map(|&i| (i, self.stacks.node(crate::StackId(i))));
                let new = (self.stacks.nodes_from(seen.nodes).iter())
                    .enumerate()
                    .map(|(k, n)| ((seen.nodes + k) as u32, *n));
                redefined.chain(new).collect()
            },
            meta: (now.meta != seen.meta).then(|| self.meta.clone()),
            clock: self.clock.clone(),
            global_track: self.global_track_id(),
        };
        *seen = now;
        Some(delta)
    }

    /// Brings a copy up to date with `delta` from its original.
    pub fn apply(&mut self, delta: Delta) {
        for s in delta.strings.iter() {
            let id = self.strings.intern(s);
            debug_assert_eq!(id.0 as usize + 1, self.strings.len());
        }
        fn set<T>(table: &mut Vec<T>, i: u32, value: T) {
            match (i as usize).cmp(&table.len()) {
                std::cmp::Ordering::Less => table[i as usize] = value,
                std::cmp::Ordering::Equal => table.push(value),
                std::cmp::Ordering::Greater => unreachable!("entries come in order"),
            }
        }
        for (i, p) in delta.processes {
            set(&mut self.processes, i, p);
        }
        for (i, t) in delta.threads {
            set(&mut self.threads, i, t);
        }
        for (i, t) in delta.tracks {
            set(&mut self.tracks, i, t);
        }
        for (i, c) in delta.counters {
            set(&mut self.counters, i, c);
        }
        for f in delta.frames {
            self.stacks.intern_frame(f.name, f.module);
        }
        for (i, n) in delta.nodes {
            self.stacks.set_copied(i, n);
        }
        if let Some(m) = delta.meta {
            self.meta = m;
        }
        self.clock = delta.clock;
        self.set_global_track_id(delta.global_track);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NamePriority, TrackKind, Value};

    /// The copy reads like the original after each delta: appended strings, processes, threads,
    /// tracks, counters, frames and stack nodes, names set in place, a reserved stack node
    /// defined later, metadata replaced under the same key, the clock.
    #[test]
    fn a_copy_follows_its_original() {
        let mut d = Defs::new();
        let mut copy = Defs::new();
        let mut seen = Seen::default();
        let same = |a: &Defs, b: &Defs| {
            assert_eq!(a.strings.len(), b.strings.len());
            for i in 0..a.strings.len() as u32 {
                assert_eq!(a.str(crate::StrId(i)), b.str(crate::StrId(i)));
            }
            assert_eq!(a.processes, b.processes);
            assert_eq!(a.threads, b.threads);
            assert_eq!(a.tracks, b.tracks);
            assert_eq!(a.counters, b.counters);
            assert_eq!(a.meta, b.meta);
            assert_eq!(a.clock, b.clock);
            assert_eq!(a.stacks.len(), b.stacks.len());
            for i in 0..a.stacks.len() as u32 {
                assert_eq!(
                    a.stacks.node(crate::StackId(i)),
                    b.stacks.node(crate::StackId(i))
                );
            }
            assert_eq!(a.global_track_id(), b.global_track_id());
        };
        let mut step = |d: &Defs, copy: &mut Defs| {
            if let Some(delta) = d.delta_since(&mut seen) {
                copy.apply(delta);
            }
            same(d, copy);
            assert!(d.delta_since(&mut seen).is_none(), "nothing changed since");
        };
        let p = d.add_process(crate::model::Process::default());
        let t = d.add_thread(p, Some(7), None);
        step(&d, &mut copy);
        let name = d.intern("worker");
        d.set_thread_name(t, name, NamePriority::Explicit);
        let f = d.stacks.intern_frame(name, None);
        let reserved = d.stacks.reserve();
        d.stacks.intern_path([f, f]);
        step(&d, &mut copy);
        d.stacks.define(reserved, None, f);
        d.set_meta("k", Value::Int(1));
        step(&d, &mut copy);
        d.set_meta("k", Value::Int(2));
        d.clock.origin_unix_ns = Some(5);
        let pname = d.intern("python");
        d.set_process_name(p, pname, NamePriority::Explicit);
        d.global_track();
        d.add_track(Track {
            kind: TrackKind::Async,
            process: Some(p),
            name: Some(pname),
            label: None,
            sort_index: None,
        });
        step(&d, &mut copy);
        d.track_mut(TrackId(0)).sort_index = Some(3);
        step(&d, &mut copy);
    }
}
