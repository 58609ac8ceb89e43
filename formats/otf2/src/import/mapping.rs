//! OTF2 definitions → IR definitions: location groups → processes, locations → tracks, regions
//! → (name, category), attributes → argument keys, metrics → counters, ranks → locations,
//! calling contexts → stacks, and ticks → nanoseconds.
//!
//! Archives written by tracex carry the IR identity of each definition as JSON properties
//! ([`crate::identity`]) and are rebuilt from those exactly; other archives are mapped from their
//! OTF2 definitions alone.

use otf2_sys as sys;
use rustc_hash::{FxHashMap, FxHashSet};
use tracex_ir::nest::OverflowTracks;
use tracex_ir::{
    Arg, Args, CounterDef, CounterId, Defs, NamePriority, Process, ProcessId, ProcessKind, StackId,
    StrId, Track, TrackId, TrackKind, Value,
};

use super::defs::{LocationGroup, Otf2Defs};
use crate::ffi::AttrValue;
use crate::identity::{self, Internal, TrackIdentity};

/// How an attribute maps to the IR.
#[derive(Clone, Copy, Debug)]
pub enum AttrMap {
    Arg {
        key: StrId,
        as_json: bool,
        as_bool: bool,
        as_null: bool,
        escaped: bool,
    },
    Internal(Internal),
}

impl AttrMap {
    /// A value with no tracex encoding (properties of foreign archives).
    pub fn plain() -> AttrMap {
        AttrMap::Arg {
            key: StrId::EMPTY,
            as_json: false,
            as_bool: false,
            as_null: false,
            escaped: false,
        }
    }
}

/// What a region stands for in the IR.
#[derive(Clone, Copy, Debug)]
pub struct RegionIr {
    pub name: StrId,
    pub cat: Option<StrId>,
    pub instant: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocKind {
    Cpu,
    Gpu,
    Metric,
}

pub struct Mapping {
    pub tracex: bool,
    resolution: u64,
    origin_tick: u64,
    tick_zero: i64,
    group_process: FxHashMap<u32, Option<ProcessId>>,
    loc_track: FxHashMap<u64, TrackId>,
    loc_kind: FxHashMap<u64, LocKind>,
    regions: FxHashMap<(u32, bool), RegionIr>,
    region_cat: FxHashMap<u32, u32>,
    instant_regions: FxHashSet<u32>,
    attrs: FxHashMap<u32, AttrMap>,
    counters: FxHashMap<(u64, u32, u32), CounterId>,
    stacks: FxHashMap<u32, Option<StackId>>,
    /// COMM_LOCATIONS group of each paradigm.
    comm_locations: FxHashMap<u8, u32>,
    pub parameters: FxHashMap<u32, StrId>,
}

/// Lower-case paradigm names, for the category of regions of foreign archives.
pub(super) fn paradigm_name(p: u8) -> Option<&'static str> {
    use sys::*;
    Some(match p as u32 {
        OTF2_PARADIGM_USER => "user",
        OTF2_PARADIGM_COMPILER => "compiler",
        OTF2_PARADIGM_OPENMP => "openmp",
        OTF2_PARADIGM_MPI => "mpi",
        OTF2_PARADIGM_CUDA => "cuda",
        OTF2_PARADIGM_MEASUREMENT_SYSTEM => "measurement_system",
        OTF2_PARADIGM_PTHREAD => "pthread",
        OTF2_PARADIGM_HMPP => "hmpp",
        OTF2_PARADIGM_OMPSS => "ompss",
        OTF2_PARADIGM_HARDWARE => "hardware",
        OTF2_PARADIGM_GASPI => "gaspi",
        OTF2_PARADIGM_UPC => "upc",
        OTF2_PARADIGM_SHMEM => "shmem",
        OTF2_PARADIGM_WINTHREAD => "winthread",
        OTF2_PARADIGM_QTTHREAD => "qtthread",
        OTF2_PARADIGM_ACETHREAD => "acethread",
        OTF2_PARADIGM_TBBTHREAD => "tbbthread",
        OTF2_PARADIGM_OPENACC => "openacc",
        OTF2_PARADIGM_OPENCL => "opencl",
        OTF2_PARADIGM_MTAPI => "mtapi",
        OTF2_PARADIGM_SAMPLING => "sampling",
        OTF2_PARADIGM_HIP => "hip",
        OTF2_PARADIGM_KOKKOS => "kokkos",
        _ => return None,
    })
}

/// The category of a region of a foreign archive: Kineto's names for GPU work and GPU API calls
/// (so `kind::classify` recognises them), the paradigm's name otherwise.
fn foreign_category(paradigm: u8, role: u8, on_gpu: bool) -> Option<&'static str> {
    use sys::*;
    let gpu_paradigm = matches!(
        paradigm as u32,
        OTF2_PARADIGM_CUDA | OTF2_PARADIGM_HIP | OTF2_PARADIGM_OPENCL
    );
    if gpu_paradigm {
        return Some(match (on_gpu, role as u32) {
            (true, OTF2_REGION_ROLE_DATA_TRANSFER) => tracex_ir::kind::cat::MEMCPY,
            (true, _) => tracex_ir::kind::cat::KERNEL,
            (false, _) => tracex_ir::kind::cat::CUDA_RUNTIME,
        });
    }
    paradigm_name(paradigm)
}

/// The number a name ends with, apart from letters (`HIP Context 1` → 1, `GPU[2]` → 2): not
/// the digits of an architecture such as rocprofv3's `gfx942` or `sm_90`, nor a number inside
/// the name (`AMD EPYC 9654 96-Core Processor`).
fn trailing_number(s: &str) -> Option<u32> {
    let s = s.trim_end_matches([']', ')', ' ']);
    let start = s.rfind(|c: char| !c.is_ascii_digit()).map_or(0, |i| i + 1);
    let before = s[..start].chars().next_back();
    if start == s.len() || before.is_some_and(|c| c.is_alphabetic() || c == '_') {
        return None;
    }
    s[start..].parse().ok()
}

/// The stream of a GPU location named like Score-P's `CUDA[0:13]` / `HIP[1:0]`.
fn stream_from_name(s: &str) -> Option<u32> {
    let inner = s.rsplit_once('[')?.1.strip_suffix(']')?;
    inner.rsplit(':').next()?.trim().parse().ok()
}

impl Mapping {
    /// Builds the IR processes and tracks of `d` in `defs`.
    pub fn new(
        d: &Otf2Defs,
        defs: &mut Defs,
        tracex: bool,
        tick_zero: i64,
    ) -> Result<Mapping, String> {
        let (resolution, origin_tick) = match (tracex, d.clock) {
            (true, _) => (1_000_000_000, 0),
            (false, Some((res, off, _, _))) if res > 0 => (res, off),
            (false, _) => (1_000_000_000, 0),
        };
        let mut m = Mapping {
            tracex,
            resolution,
            origin_tick,
            tick_zero,
            group_process: FxHashMap::default(),
            loc_track: FxHashMap::default(),
            loc_kind: FxHashMap::default(),
            regions: FxHashMap::default(),
            region_cat: FxHashMap::default(),
            instant_regions: FxHashSet::default(),
            attrs: FxHashMap::default(),
            counters: FxHashMap::default(),
            stacks: FxHashMap::default(),
            comm_locations: FxHashMap::default(),
            parameters: FxHashMap::default(),
        };
        for (&r, g) in &d.groups {
            if g.ty as u32 == sys::OTF2_GROUP_TYPE_REGIONS {
                let name = d.s(g.name);
                if tracex && name == identity::INSTANT_GROUP {
                    m.instant_regions
                        .extend(g.members.iter().map(|&x| x as u32));
                    continue;
                }
                for &reg in &g.members {
                    m.region_cat.entry(reg as u32).or_insert(r);
                }
            } else if g.ty as u32 == sys::OTF2_GROUP_TYPE_COMM_LOCATIONS {
                m.comm_locations.entry(g.paradigm).or_insert(r);
            }
        }
        for (&r, &name) in &d.parameters {
            m.parameters.insert(r, defs.intern(d.s(name)));
        }
        m.processes(d, defs)?;
        m.tracks(d, defs)?;
        Ok(m)
    }

    fn processes(&mut self, d: &Otf2Defs, defs: &mut Defs) -> Result<(), String> {
        let mut by_id = Vec::new();
        let mut next_device = 0u32;
        // Groups with locations first: devices numbered by counting are then the ones with work
        // (rocprofv3 defines a group for every agent, CPUs included).
        let used: FxHashSet<u32> = d.locations.values().map(|l| l.group).collect();
        let mut groups: Vec<(&u32, &LocationGroup)> = d.location_groups.iter().collect();
        groups.sort_by_key(|(r, _)| (!used.contains(r), **r));
        for (&r, g) in groups {
            if self.tracex {
                match d.property(&g.props, identity::PROCESS_PROPERTY) {
                    Some(json) => {
                        let (id, p) =
                            identity::process_from_json(defs, &json).ok_or_else(|| {
                                format!(
                                    "location group {r}: unreadable {}",
                                    identity::PROCESS_PROPERTY
                                )
                            })?;
                        by_id.push((id, r, p));
                    }
                    None => {
                        self.group_process.insert(r, None);
                    }
                }
                continue;
            }
            let accelerator = g.ty as u32 == sys::OTF2_LOCATION_GROUP_TYPE_ACCELERATOR;
            let parent = d.nodes.get(&g.parent);
            let kind = if accelerator {
                let device = parent
                    .and_then(|n| d.s(n.name).trim().parse().ok())
                    .or_else(|| trailing_number(d.s(g.name)))
                    .unwrap_or(next_device);
                next_device = next_device.max(device + 1);
                ProcessKind::Device { device }
            } else {
                ProcessKind::Host
            };
            // The host: the group's node, or for a device group the node above the device.
            let host_node = if accelerator {
                parent.and_then(|n| d.nodes.get(&n.parent))
            } else {
                parent
            };
            let name = defs.intern(d.s(g.name));
            let host = host_node.map(|n| defs.intern(d.s(n.name)));
            // Properties of the group and of the node it sits under (a GPU's name, UUID, ...).
            let props = parent
                .map_or(&[][..], |n| &n.props[..])
                .iter()
                .chain(&g.props);
            let meta = props
                .map(|&(k, v)| Arg {
                    key: defs.intern(d.s(k)),
                    value: Mapping::value(d, AttrMap::plain(), v),
                })
                .collect();
            let p = defs.add_process(Process {
                kind,
                name: Some(name),
                name_priority: NamePriority::Explicit,
                host,
                meta,
                ..Process::default()
            });
            self.group_process.insert(r, Some(p));
        }
        by_id.sort_by_key(|(id, _, _)| *id);
        let mut ids = FxHashMap::default();
        for (id, r, p) in by_id {
            let pid = defs.add_process(p);
            ids.insert(id, pid);
            self.group_process.insert(r, Some(pid));
        }
        Ok(())
    }

    fn tracks(&mut self, d: &Otf2Defs, defs: &mut Defs) -> Result<(), String> {
        let mut tracex_tracks = Vec::new();
        let mut streams_in_group: FxHashMap<u32, u32> = FxHashMap::default();
        for (&r, l) in &d.locations {
            let process = self.group_process.get(&l.group).copied().flatten();
            let kind = match l.ty as u32 {
                sys::OTF2_LOCATION_TYPE_ACCELERATOR_STREAM => LocKind::Gpu,
                sys::OTF2_LOCATION_TYPE_METRIC => LocKind::Metric,
                _ => LocKind::Cpu,
            };
            self.loc_kind.insert(r, kind);
            if self.tracex {
                if let Some(json) = d.property(&l.props, identity::TRACK_PROPERTY) {
                    let (id, t) = identity::track_from_json(&json).ok_or_else(|| {
                        format!("location {r}: unreadable {}", identity::TRACK_PROPERTY)
                    })?;
                    tracex_tracks.push((id, r, t, process));
                    continue;
                }
            }
            if kind == LocKind::Metric {
                continue;
            }
            let name = defs.intern(d.s(l.name));
            let track = match (kind, process.map(|p| defs.process(p).kind)) {
                (LocKind::Gpu, Some(ProcessKind::Device { device })) => {
                    let n = streams_in_group.entry(l.group).or_insert(0);
                    let stream = stream_from_name(d.s(l.name)).unwrap_or(*n);
                    *n += 1;
                    defs.add_track(Track {
                        kind: TrackKind::GpuStream { device, stream },
                        process,
                        name: Some(name),
                        label: None,
                        sort_index: None,
                    })
                }
                _ => {
                    let t = self.thread_track(defs, process, name);
                    if let TrackKind::Thread(th) = defs.track(t).kind {
                        let meta: Args = l
                            .props
                            .iter()
                            .map(|&(k, v)| Arg {
                                key: defs.intern(d.s(k)),
                                value: Mapping::value(d, AttrMap::plain(), v),
                            })
                            .collect();
                        defs.thread_mut(th).meta = meta;
                    }
                    t
                }
            };
            self.loc_track.insert(r, track);
        }
        // tracex archives: rebuild tracks in their original order, overflow lanes after the
        // tracks they spill from.
        tracex_tracks.sort_by_key(|(id, ..)| *id);
        let mut by_id: FxHashMap<u64, TrackId> = FxHashMap::default();
        let mut lanes = OverflowTracks::default();
        for (id, r, t, process) in tracex_tracks {
            let track = match t {
                TrackIdentity::Thread {
                    tid,
                    label,
                    name,
                    sort,
                    meta,
                    ..
                } => {
                    let p = match process {
                        Some(p) => p,
                        None => defs.add_process(Process::default()),
                    };
                    let label = label.map(|l| defs.intern(&l));
                    let th = defs.add_thread(p, tid, label);
                    if let Some(n) = name {
                        let n = defs.intern(&n);
                        defs.set_thread_name(th, n, NamePriority::Explicit);
                    }
                    let meta: Args = identity::args_from_json(defs, Some(&meta));
                    let t = defs.thread_mut(th);
                    t.sort_index = sort;
                    t.meta = meta;
                    t.track
                }
                TrackIdentity::Other {
                    kind,
                    device,
                    stream,
                    label,
                    name,
                    sort,
                    ..
                } => {
                    let kind = match kind.as_str() {
                        "gpu" => TrackKind::GpuStream { device, stream },
                        "async" => TrackKind::Async,
                        "process" => TrackKind::Process,
                        _ => TrackKind::Global,
                    };
                    if kind == TrackKind::Global {
                        defs.global_track()
                    } else {
                        let label = label.map(|l| defs.intern(&l));
                        let name = name.map(|n| defs.intern(&n));
                        defs.add_track(Track {
                            kind,
                            process,
                            name,
                            label,
                            sort_index: sort,
                        })
                    }
                }
                TrackIdentity::Overflow { of, level } => {
                    let parent = *by_id.get(&of).ok_or_else(|| {
                        format!("location {r}: overflow lane of an unknown track")
                    })?;
                    lanes.get(defs, parent, level)
                }
            };
            by_id.insert(id, track);
            self.loc_track.insert(r, track);
        }
        Ok(())
    }

    fn thread_track(&self, defs: &mut Defs, process: Option<ProcessId>, name: StrId) -> TrackId {
        let p = match process {
            Some(p) => p,
            None => defs.add_process(Process::default()),
        };
        let th = defs.add_thread(p, None, None);
        defs.set_thread_name(th, name, NamePriority::Explicit);
        defs.thread(th).track
    }

    /// The track of a location; metric locations that also hold other events get a thread.
    pub fn track(&mut self, d: &Otf2Defs, defs: &mut Defs, loc: u64) -> Option<TrackId> {
        if let Some(&t) = self.loc_track.get(&loc) {
            return Some(t);
        }
        let l = d.locations.get(&loc)?;
        let process = self.group_process.get(&l.group).copied().flatten();
        let name = defs.intern(d.s(l.name));
        let t = self.thread_track(defs, process, name);
        self.loc_track.insert(loc, t);
        Some(t)
    }

    pub fn kind(&self, loc: u64) -> LocKind {
        self.loc_kind.get(&loc).copied().unwrap_or(LocKind::Cpu)
    }

    pub fn process_of(&self, d: &Otf2Defs, loc: u64) -> Option<ProcessId> {
        d.locations
            .get(&loc)
            .and_then(|l| self.group_process.get(&l.group).copied().flatten())
    }

    /// OTF2 ticks → IR nanoseconds.
    pub fn ns(&self, tick: u64) -> i64 {
        let d = tick as i128 - self.origin_tick as i128;
        let ns = if self.resolution == 1_000_000_000 {
            d
        } else {
            let r = self.resolution as i128;
            let x = d * 1_000_000_000;
            // round half away from zero
            if x >= 0 {
                (x + r / 2) / r
            } else {
                (x - r / 2) / r
            }
        };
        (ns + self.tick_zero as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    /// The IR name and category of a region as used on a location of `kind`.
    pub fn region(
        &mut self,
        d: &Otf2Defs,
        defs: &mut Defs,
        region: u32,
        kind: LocKind,
    ) -> Option<RegionIr> {
        let on_gpu = kind == LocKind::Gpu;
        let key = (region, on_gpu && !self.tracex);
        if let Some(r) = self.regions.get(&key) {
            return Some(*r);
        }
        let def = d.regions.get(&region)?;
        let cat = match self.region_cat.get(&region) {
            Some(g) if self.tracex => Some(defs.intern(d.s(d.groups[g].name))),
            _ if self.tracex => None,
            _ => foreign_category(def.paradigm, def.role, on_gpu).map(|c| defs.intern(c)),
        };
        let r = RegionIr {
            name: defs.intern(d.s(def.name)),
            cat,
            instant: self.instant_regions.contains(&region),
        };
        self.regions.insert(key, r);
        Some(r)
    }

    /// How attribute `attr` maps to the IR.
    pub fn attr(&mut self, d: &Otf2Defs, defs: &mut Defs, attr: u32) -> Option<AttrMap> {
        if let Some(a) = self.attrs.get(&attr) {
            return Some(*a);
        }
        let def = d.attributes.get(&attr)?;
        let name = d.s(def.name);
        let descr = d.s(def.description);
        let m = match Internal::from_name(name) {
            Some(i) if descr == identity::INTERNAL => AttrMap::Internal(i),
            _ => AttrMap::Arg {
                key: defs.intern(name),
                as_json: descr == identity::JSON_VALUE,
                as_bool: descr == identity::BOOL_VALUE,
                as_null: descr == identity::NULL_VALUE,
                escaped: descr == identity::ESCAPED_VALUE,
            },
        };
        self.attrs.insert(attr, m);
        Some(m)
    }

    /// An attribute value as an IR value.
    pub fn value(d: &Otf2Defs, m: AttrMap, v: AttrValue) -> Value {
        let AttrMap::Arg {
            as_json,
            as_bool,
            as_null,
            escaped,
            ..
        } = m
        else {
            return Value::Null;
        };
        match v {
            AttrValue::U8(_) if as_null => Value::Null,
            AttrValue::U8(b) if as_bool => Value::Bool(b != 0),
            AttrValue::U8(x) => Value::UInt(x.into()),
            AttrValue::U16(x) => Value::UInt(x.into()),
            AttrValue::U32(x) => Value::UInt(x.into()),
            AttrValue::U64(x) => Value::UInt(x),
            AttrValue::I8(x) => Value::Int(x.into()),
            AttrValue::I16(x) => Value::Int(x.into()),
            AttrValue::I32(x) => Value::Int(x.into()),
            AttrValue::I64(x) => Value::Int(x),
            AttrValue::F32(x) => Value::Float(x.into()),
            AttrValue::F64(x) => Value::Float(x),
            AttrValue::String(s) if as_json => Value::Json(d.s(s.0).into()),
            AttrValue::String(s) if escaped => match serde_json::from_str::<String>(d.s(s.0)) {
                Ok(text) => Value::Str(text.into()),
                Err(_) => Value::Str(d.s(s.0).into()),
            },
            AttrValue::String(s) => Value::Str(d.s(s.0).into()),
            AttrValue::Ref { id, .. } => Value::UInt(id),
        }
    }

    /// The counter of member `member` (index `index` in metric `metric`) recorded on `loc`.
    pub fn counter(
        &mut self,
        d: &Otf2Defs,
        defs: &mut Defs,
        loc: u64,
        metric: u32,
        member: u32,
    ) -> CounterId {
        if let Some(&c) = self.counters.get(&(loc, metric, member)) {
            return c;
        }
        let l = d.locations.get(&loc);
        let tracex_def = if self.tracex {
            let name = format!("{}_{metric}", identity::COUNTER_PROPERTY);
            l.and_then(|l| d.property(&l.props, &name))
                .and_then(|json| identity::counter_from_json(defs, &json))
        } else {
            None
        };
        let def = match tracex_def {
            Some((_, _, mut c)) => {
                c.process = self.process_of(d, loc);
                c
            }
            None => {
                // A metric instance scoped to a process (group) or location belongs to it.
                let process = match d.instances.get(&metric) {
                    Some(&(_, ty, scope)) if ty as u32 == sys::OTF2_SCOPE_LOCATION_GROUP => {
                        self.group_process.get(&(scope as u32)).copied().flatten()
                    }
                    Some(&(_, ty, scope)) if ty as u32 == sys::OTF2_SCOPE_LOCATION => {
                        self.process_of(d, scope)
                    }
                    _ => self.process_of(d, loc),
                };
                let m = d.members.get(&member);
                let unit = m.map(|m| d.s(m.unit)).filter(|u| !u.is_empty());
                // Metrics recorded on a thread or stream belong to it: tell them apart by its name.
                let label = match (self.kind(loc), l) {
                    (LocKind::Metric, _) | (_, None) => None,
                    (_, Some(l)) => Some(defs.intern(d.s(l.name))),
                };
                CounterDef {
                    process,
                    name: defs.intern(m.map_or("metric", |m| d.s(m.name))),
                    series: None,
                    label,
                    unit: unit.map(|u| defs.intern(u)),
                    cat: None,
                }
            }
        };
        let c = defs.add_counter(def);
        self.counters.insert((loc, metric, member), c);
        c
    }

    /// The location of rank `rank` in communicator `comm`, seen from location `me`.
    pub fn rank_location(&self, d: &Otf2Defs, comm: u32, rank: u32, me: u64) -> Option<u64> {
        let g = d.groups.get(&d.comms.get(&comm)?.0)?;
        match g.ty as u32 {
            sys::OTF2_GROUP_TYPE_COMM_SELF => Some(me),
            sys::OTF2_GROUP_TYPE_COMM_LOCATIONS => g.members.get(rank as usize).copied(),
            _ => {
                let all = d.groups.get(self.comm_locations.get(&g.paradigm)?)?;
                let idx = *g.members.get(rank as usize)?;
                all.members.get(idx as usize).copied()
            }
        }
    }

    /// The IR stack of a calling context (frames: region names, modules: region categories).
    pub fn stack(&mut self, d: &Otf2Defs, defs: &mut Defs, context: u32) -> Option<StackId> {
        if let Some(s) = self.stacks.get(&context) {
            return *s;
        }
        let mut chain = Vec::new();
        let mut cur = context;
        while let Some(&(region, parent)) = d.contexts.get(&cur) {
            if chain.len() > d.contexts.len() {
                break;
            }
            chain.push(region);
            cur = parent;
        }
        let frames: Vec<_> = chain
            .into_iter()
            .rev()
            .map(|r| {
                let ir = self.region(d, defs, r, LocKind::Cpu);
                let (name, module) = match ir {
                    Some(ir) => (ir.name, ir.cat),
                    None => (defs.intern("?"), None),
                };
                defs.stacks.intern_frame(name, module)
            })
            .collect();
        let s = defs.stacks.intern_path(frames);
        self.stacks.insert(context, s);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_categories() {
        assert_eq!(trailing_number("HIP Context 12"), Some(12));
        assert_eq!(trailing_number("main"), None);
        assert_eq!(trailing_number("GPU[2]"), Some(2));
        assert_eq!(trailing_number("gfx942"), None);
        assert_eq!(trailing_number("sm_90"), None);
        assert_eq!(trailing_number("AMD EPYC 9654 96-Core Processor"), None);
        assert_eq!(stream_from_name("CUDA[0:13]"), Some(13));
        assert_eq!(stream_from_name("HIP[1:0]"), Some(0));
        assert_eq!(stream_from_name("stream"), None);
        use sys::*;
        assert_eq!(
            foreign_category(OTF2_PARADIGM_HIP as u8, 2, false),
            Some("cuda_runtime")
        );
        assert_eq!(
            foreign_category(OTF2_PARADIGM_HIP as u8, 40, true),
            Some("kernel")
        );
        assert_eq!(
            foreign_category(OTF2_PARADIGM_MPI as u8, 28, false),
            Some("mpi")
        );
        assert_eq!(
            foreign_category(OTF2_PARADIGM_UNKNOWN as u8, 1, false),
            None
        );
    }
}
