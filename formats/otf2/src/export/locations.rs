//! IR tracks and counters → OTF2 locations; IR processes → location groups; hosts and GPU
//! devices → the system tree.
//!
//! System tree: `tracex` (machine) → one node per host (`Process.host`, else "unknown host")
//! → for GPU devices an accelerator-device node. Location groups: one per process (PROCESS) and
//! per GPU device (ACCELERATOR), and a `global` group for what belongs to no process.
//! Locations: threads (CPU_THREAD), GPU streams (ACCELERATOR_STREAM), async, process-scoped and
//! global tracks and every overflow lane each on their own location (so each stays nested), and
//! one METRIC location per counter group (the counters of one process sharing a name and label:
//! the series of one Chrome counter event), up to [`METRIC_LOCATIONS_PER_PROCESS`] per process
//! and the rest of the process's counters on one more. libotf2 keeps a buffer chunk of at least
//! 256 KiB per location: locations must not grow with the number of series. Refs are dense, in
//! order of first use.

use otf2_sys as sys;
use rustc_hash::FxHashMap;
use tracex_ir::{CounterDef, CounterId, Defs, ProcessId, ProcessKind, StrId, TrackId, TrackKind};

use super::props::{self, Owner};
use super::splitter::OpenSlices;
use super::strings::Strings;
use crate::ffi::{ArchiveWriter, Result};
use crate::identity;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocOf {
    Track(TrackId),
    /// The counters of one group; named after the group's first counter.
    Counters(CounterId),
    /// The counters of a process beyond its first groups.
    OtherCounters,
}

/// METRIC locations of one process named after their counter group; further groups share one.
pub const METRIC_LOCATIONS_PER_PROCESS: u32 = 64;

/// The name and label of a counter: what its series share.
type CounterGroup = (Option<ProcessId>, StrId, Option<StrId>);

pub struct Loc {
    pub of: LocOf,
    pub ty: u32,
    pub group: u32,
    pub open: OpenSlices,
}

#[derive(Default)]
pub struct Locations {
    pub locs: Vec<Loc>,
    by_track: FxHashMap<TrackId, u32>,
    by_counter: FxHashMap<CounterId, u32>,
    by_counter_group: FxHashMap<CounterGroup, u32>,
    /// Per process: its named METRIC locations, and the one holding the rest.
    metric_locs: FxHashMap<Option<ProcessId>, (u32, Option<u32>)>,
    groups: Vec<Option<ProcessId>>,
    by_process: FxHashMap<Option<ProcessId>, u32>,
}

/// The name a counter group is shown under: its name and label.
pub fn counter_group_name(defs: &Defs, c: &CounterDef) -> String {
    let mut n = defs.str(c.name).to_string();
    if let Some(l) = c.label {
        n.push_str(&format!(" [{}]", defs.str(l)));
    }
    n
}

/// The name a counter is shown under: its group name, id and series.
pub fn counter_display_name(defs: &Defs, c: &CounterDef) -> String {
    let mut n = counter_group_name(defs, c);
    if let Some(s) = c.series {
        n.push(' ');
        n.push_str(defs.str(s));
    }
    n
}

impl Locations {
    pub fn len(&self) -> u64 {
        self.locs.len() as u64
    }

    /// The location group of a process (`None`: the global group).
    pub fn group(&mut self, process: Option<ProcessId>) -> u32 {
        *self.by_process.entry(process).or_insert_with(|| {
            self.groups.push(process);
            self.groups.len() as u32 - 1
        })
    }

    fn add(&mut self, ar: &mut ArchiveWriter, of: LocOf, ty: u32, group: u32) -> Result<u32> {
        let r = self.locs.len() as u32;
        self.locs.push(Loc {
            of,
            ty,
            group,
            open: OpenSlices::default(),
        });
        // Open the writer now: every defined location then has its event file.
        ar.evt_writer(r as u64)?;
        Ok(r)
    }

    /// The location of a track, made (with the tracks it spills from) on first use.
    pub fn track(&mut self, ar: &mut ArchiveWriter, defs: &Defs, track: TrackId) -> Result<u32> {
        if let Some(&l) = self.by_track.get(&track) {
            return Ok(l);
        }
        let t = defs.track(track);
        if let TrackKind::Overflow { of, .. } = t.kind {
            self.track(ar, defs, of)?;
        }
        let ty = match defs.track(defs.root_track(track)).kind {
            TrackKind::GpuStream { .. } => sys::OTF2_LOCATION_TYPE_ACCELERATOR_STREAM,
            _ => sys::OTF2_LOCATION_TYPE_CPU_THREAD,
        };
        let group = self.group(t.process);
        let l = self.add(ar, LocOf::Track(track), ty, group)?;
        self.by_track.insert(track, l);
        Ok(l)
    }

    /// The metric location of a counter: its group's, made on first use.
    pub fn counter(
        &mut self,
        ar: &mut ArchiveWriter,
        defs: &Defs,
        counter: CounterId,
    ) -> Result<u32> {
        if let Some(&l) = self.by_counter.get(&counter) {
            return Ok(l);
        }
        let c = defs.counter(counter);
        let key = (c.process, c.name, c.label);
        let l = match self.by_counter_group.get(&key) {
            Some(&l) => l,
            None => {
                let group = self.group(c.process);
                let (named, other) = self
                    .metric_locs
                    .get(&c.process)
                    .copied()
                    .unwrap_or_default();
                let ty = sys::OTF2_LOCATION_TYPE_METRIC;
                let l = if named < METRIC_LOCATIONS_PER_PROCESS {
                    let l = self.add(ar, LocOf::Counters(counter), ty, group)?;
                    self.metric_locs.insert(c.process, (named + 1, other));
                    l
                } else if let Some(l) = other {
                    l
                } else {
                    let l = self.add(ar, LocOf::OtherCounters, ty, group)?;
                    self.metric_locs.insert(c.process, (named, Some(l)));
                    l
                };
                self.by_counter_group.insert(key, l);
                l
            }
        };
        self.by_counter.insert(counter, l);
        Ok(l)
    }

    /// Writes the system tree, the location groups and the locations (with `events[ref]`
    /// events each) and their identity properties.
    pub fn write_defs(
        &self,
        ar: &mut ArchiveWriter,
        strings: &mut Strings,
        defs: &Defs,
        events: &[u64],
    ) -> Result<()> {
        let undefined = sys::OTF2_UNDEFINED_SYSTEM_TREE_NODE;
        // System tree: machine, hosts, devices.
        let machine = strings.name(ar, "tracex")?;
        let machine_class = strings.name(ar, "machine")?;
        let node_class = strings.name(ar, "node")?;
        let device_class = strings.name(ar, "accelerator device")?;
        let mut next_node = 0u32;
        let mut node = |ar: &mut ArchiveWriter,
                        name,
                        class,
                        parent,
                        domain|
         -> Result<sys::OTF2_SystemTreeNodeRef> {
            let r = sys::OTF2_SystemTreeNodeRef(next_node);
            next_node += 1;
            let g = ar.global_defs()?;
            g.system_tree_node(r, name, class, parent)?;
            g.system_tree_node_domain(r, domain)?;
            Ok(r)
        };
        let root = node(
            ar,
            machine,
            machine_class,
            undefined,
            sys::OTF2_SYSTEM_TREE_DOMAIN_MACHINE,
        )?;
        let mut hosts: FxHashMap<Option<StrId>, sys::OTF2_SystemTreeNodeRef> = FxHashMap::default();
        let mut group_parent = Vec::with_capacity(self.groups.len());
        for p in &self.groups {
            let Some(p) = *p else {
                group_parent.push(root);
                continue;
            };
            let proc = defs.process(p);
            let host = match hosts.get(&proc.host) {
                Some(&h) => h,
                None => {
                    let name = match proc.host {
                        Some(h) => strings.id(ar, defs.str(h), h)?,
                        None => strings.name(ar, "unknown host")?,
                    };
                    let h = node(
                        ar,
                        name,
                        node_class,
                        root,
                        sys::OTF2_SYSTEM_TREE_DOMAIN_SHARED_MEMORY,
                    )?;
                    hosts.insert(proc.host, h);
                    h
                }
            };
            group_parent.push(match proc.kind {
                ProcessKind::Device { .. } => {
                    let name = strings.name(ar, &defs.process_display_name(p))?;
                    node(
                        ar,
                        name,
                        device_class,
                        host,
                        sys::OTF2_SYSTEM_TREE_DOMAIN_ACCELERATOR_DEVICE,
                    )?
                }
                ProcessKind::Host => host,
            });
        }
        // Location groups, with the IR process as a property.
        for (i, p) in self.groups.iter().enumerate() {
            let r = sys::OTF2_LocationGroupRef(i as u32);
            let (name, ty) = match *p {
                Some(p) => (
                    defs.process_display_name(p),
                    match defs.process(p).kind {
                        ProcessKind::Device { .. } => sys::OTF2_LOCATION_GROUP_TYPE_ACCELERATOR,
                        ProcessKind::Host => sys::OTF2_LOCATION_GROUP_TYPE_PROCESS,
                    },
                ),
                None => ("global".to_string(), sys::OTF2_LOCATION_GROUP_TYPE_PROCESS),
            };
            let name = strings.name(ar, &name)?;
            ar.global_defs()?
                .location_group(r, name, ty, group_parent[i])?;
            if let Some(p) = *p {
                let json = identity::process_json(defs, p.0, defs.process(p));
                props::write(
                    ar,
                    strings,
                    Owner::Group(i as u32),
                    identity::PROCESS_PROPERTY,
                    &json,
                )?;
            }
        }
        // Locations, with the IR track as a property (counters: see `Metrics::write_defs`).
        for (i, l) in self.locs.iter().enumerate() {
            let r = sys::OTF2_LocationRef(i as u64);
            let n = events.get(i).copied().unwrap_or(0);
            match l.of {
                LocOf::Track(t) => {
                    let name = strings.name(ar, &defs.track_display_name(t))?;
                    ar.global_defs()?.location(
                        r,
                        name,
                        l.ty,
                        n,
                        sys::OTF2_LocationGroupRef(l.group),
                    )?;
                    let json = identity::track_json(defs, t.0, defs.track(t));
                    props::write(
                        ar,
                        strings,
                        Owner::Location(i as u64),
                        identity::TRACK_PROPERTY,
                        &json,
                    )?;
                }
                LocOf::Counters(_) | LocOf::OtherCounters => {
                    let name = match l.of {
                        LocOf::Counters(c) => counter_group_name(defs, defs.counter(c)),
                        _ => "counters".to_string(),
                    };
                    let name = strings.name(ar, &name)?;
                    let g = ar.global_defs()?;
                    g.location(r, name, l.ty, n, sys::OTF2_LocationGroupRef(l.group))?;
                }
            }
        }
        Ok(())
    }
}
