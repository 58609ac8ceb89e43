//! Who did what: nsys global ids → IR processes, threads, GPU devices and streams, made on first
//! use so that only what has events appears, and named from the export's tables.
//!
//! `globalTid` = machine (bits 48–63) | pid (24–47) | tid (0–23); `globalPid` is the same with
//! tid 0. The IR process of a host process is keyed by `globalTid >> 24` (machine and pid).

use rusqlite::Connection;
use rustc_hash::FxHashMap;
use tracex_ir::{
    Arg, Defs, NamePriority, Process, ProcessId, ProcessKind, StrId, Track, TrackId, TrackKind,
    Value,
};

use crate::db::{lenient_rows, pairs, Schema};

/// Machine, pid and tid of a global id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GlobalId(pub i64);

impl GlobalId {
    pub fn machine(self) -> i64 {
        (self.0 as u64 >> 48) as i64
    }
    pub fn pid(self) -> i64 {
        (self.0 >> 24) & 0xFF_FFFF
    }
    pub fn tid(self) -> i64 {
        self.0 & 0xFF_FFFF
    }
    /// The key of the process: machine and pid.
    pub fn process_key(self) -> i64 {
        (self.0 as u64 >> 24) as i64
    }
}

/// A VM id as the tables write it: either the machine number or that number shifted to bits
/// 48–63 (`TARGET_INFO_GPU.vmId = 1 << 48` on the local machine, `TARGET_INFO_CUDA_STREAM.vmId = 1`).
fn machine_of_vm(vm: i64) -> i64 {
    if vm >= 1 << 48 {
        (vm as u64 >> 48) as i64
    } else {
        vm
    }
}

/// What the export says about one GPU.
#[derive(Clone, Debug, Default)]
struct GpuInfo {
    name: Option<String>,
    meta: Vec<(&'static str, Value)>,
}

/// Key of a stream: (machine, pid, device, context, stream).
type StreamKey = (i64, i64, i64, i64, i64);

#[derive(Default)]
pub struct Identity {
    process_names: FxHashMap<i64, String>,
    mpi_ranks: FxHashMap<i64, i64>,
    thread_names: FxHashMap<i64, (i64, i64)>,
    nvtx_thread_names: FxHashMap<i64, String>,
    hostnames: FxHashMap<i64, String>,
    gpus: FxHashMap<(i64, i64), GpuInfo>,
    nvtx_stream_names: FxHashMap<StreamKey, String>,
    /// `TARGET_INFO_CUDA_STREAM`: (priority, creation flag) by (machine, pid, context, stream).
    stream_info: FxHashMap<(i64, i64, i64, i64), (i64, i64)>,
    /// `TARGET_INFO_CUDA_DEVICE`: the CUDA device index each process saw a GPU as.
    cuda_ids: FxHashMap<(i64, i64), Vec<(i64, i64)>>,
    /// `ProcessStreams`: captured stdout/stderr by process key: (which, file name, content).
    process_output: FxHashMap<i64, Vec<(String, String)>>,
    null_streams: FxHashMap<(i64, i64, i64, i64), i64>,
    processes: FxHashMap<i64, ProcessId>,
    threads: FxHashMap<i64, TrackId>,
    devices: FxHashMap<(i64, i64), ProcessId>,
    streams: FxHashMap<StreamKey, TrackId>,
    /// Process-scoped tracks (instants without a thread) per IR process.
    process_tracks: FxHashMap<ProcessId, TrackId>,
    /// Async tracks per (IR process, name).
    async_tracks: FxHashMap<(ProcessId, StrId), TrackId>,
}

/// A CUDA stream priority: a signed int that exports store as its unsigned 32-bit pattern
/// (`4294967295` is priority -1).
fn signed_priority(p: i64) -> i64 {
    if (0..=u32::MAX as i64).contains(&p) {
        p as u32 as i32 as i64
    } else {
        p
    }
}

impl Identity {
    /// Reads the naming tables: processes, thread names, host names, GPUs, stream names.
    pub fn load(conn: &Connection, schema: &Schema) -> Identity {
        let mut id = Identity::default();
        if let Some(t) = schema.table("PROCESSES") {
            for (gpid, name) in pairs::<i64, String>(conn, &t, ("globalPid", "name"), "1") {
                if let (Some(g), Some(n)) = (gpid, name) {
                    id.process_names.insert(GlobalId(g).process_key(), n);
                }
            }
        }
        if let Some(t) = schema.table("MPI_RANKS") {
            for (gtid, rank) in pairs::<i64, i64>(conn, &t, ("globalTid", "rank"), "1") {
                if let (Some(g), Some(r)) = (gtid, rank) {
                    id.mpi_ranks.insert(GlobalId(g).process_key(), r);
                }
            }
        }
        if let Some(t) = schema.table("ThreadNames") {
            let sql = format!(
                "SELECT {}, {}, {} FROM {}",
                t.col("globalTid"),
                t.col("nameId"),
                t.col("priority"),
                t.sql_name()
            );
            for (gtid, name, prio) in lenient_rows(conn, &sql, |r| {
                Ok((
                    r.get::<_, Option<i64>>(0)?,
                    r.get::<_, Option<i64>>(1)?,
                    r.get::<_, Option<i64>>(2)?,
                ))
            }) {
                if let (Some(g), Some(n)) = (gtid, name) {
                    let p = prio.unwrap_or(0);
                    let e = id.thread_names.entry(g).or_insert((n, p));
                    if p >= e.1 {
                        *e = (n, p);
                    }
                }
            }
        }
        if let Some(t) = schema.table("TARGET_INFO_SYSTEM_ENV") {
            let hostname = format!("{} = 'Hostname'", t.col("name"));
            for (vm, host) in pairs::<i64, String>(conn, &t, ("globalVid", "value"), &hostname) {
                if let Some(h) = host.filter(|h| !h.is_empty()) {
                    id.hostnames.insert(machine_of_vm(vm.unwrap_or(1)), h);
                }
            }
        }
        id.load_gpus(conn, schema);
        id.load_streams_devices_output(conn, schema);
        if let Some(t) = schema.table("TARGET_INFO_NVTX_CUDA_STREAM") {
            let sql = format!(
                "SELECT {} FROM {}",
                t.select_list(&[
                    "vmId",
                    "processId",
                    "deviceId",
                    "contextId",
                    "streamId",
                    "name"
                ]),
                t.sql_name()
            );
            for (k, name) in lenient_rows(conn, &sql, |r| {
                Ok((
                    (
                        machine_of_vm(r.get::<_, Option<i64>>(0)?.unwrap_or(1)),
                        r.get::<_, Option<i64>>(1)?.unwrap_or(-1),
                        r.get::<_, Option<i64>>(2)?.unwrap_or(-1),
                        r.get::<_, Option<i64>>(3)?.unwrap_or(-1),
                        r.get::<_, Option<i64>>(4)?.unwrap_or(-1),
                    ),
                    r.get::<_, Option<String>>(5)?,
                ))
            }) {
                if let Some(n) = name {
                    id.nvtx_stream_names.insert(k, n);
                }
            }
        }
        for (table, stream_col) in [
            ("TARGET_INFO_CUDA_CONTEXT_INFO", "nullStreamId"),
            ("TARGET_INFO_CUDA_NULL_STREAM", "streamId"),
        ] {
            let Some(t) = schema.table(table) else {
                continue;
            };
            let sql = format!(
                "SELECT {} FROM {}",
                t.select_list(&["vmId", "processId", "deviceId", "contextId", stream_col]),
                t.sql_name()
            );
            for (k, s) in lenient_rows(conn, &sql, |r| {
                Ok((
                    (
                        machine_of_vm(r.get::<_, Option<i64>>(0)?.unwrap_or(1)),
                        r.get::<_, Option<i64>>(1)?.unwrap_or(-1),
                        r.get::<_, Option<i64>>(2)?.unwrap_or(-1),
                        r.get::<_, Option<i64>>(3)?.unwrap_or(-1),
                    ),
                    r.get::<_, Option<i64>>(4)?,
                ))
            }) {
                if let Some(s) = s {
                    id.null_streams.insert(k, s);
                }
            }
        }
        id
    }

    /// GPU names and properties: `TARGET_INFO_GPU` (id or, before 2022, deviceId), and the
    /// pre-2022 `TARGET_INFO_CUDA_GPU`.
    /// Stream types and priorities, CUDA device indexes per process, and captured output.
    fn load_streams_devices_output(&mut self, conn: &Connection, schema: &Schema) {
        if let Some(t) = schema.table("TARGET_INFO_CUDA_STREAM") {
            let sql = format!(
                "SELECT {} FROM {}",
                t.select_list(&[
                    "vmId",
                    "processId",
                    "contextId",
                    "streamId",
                    "priority",
                    "flag"
                ]),
                t.sql_name()
            );
            for row in lenient_rows(conn, &sql, |r| {
                let v = |i| r.get::<_, Option<i64>>(i);
                Ok((v(0)?, v(1)?, v(2)?, v(3)?, v(4)?, v(5)?))
            }) {
                if let (vm, Some(pid), Some(ctx), Some(stream), prio, flag) = row {
                    let key = (machine_of_vm(vm.unwrap_or(1)), pid, ctx, stream);
                    self.stream_info
                        .insert(key, (signed_priority(prio.unwrap_or(0)), flag.unwrap_or(0)));
                }
            }
        }
        if let Some(t) = schema.table("TARGET_INFO_CUDA_DEVICE") {
            let sql = format!(
                "SELECT {} FROM {}",
                t.select_list(&["gpuId", "cudaId", "pid"]),
                t.sql_name()
            );
            for row in lenient_rows(conn, &sql, |r| {
                let v = |i| r.get::<_, Option<i64>>(i);
                Ok((v(0)?, v(1)?, v(2)?))
            }) {
                if let (Some(gpu), Some(cuda), Some(pid)) = row {
                    self.cuda_ids.entry((1, gpu)).or_default().push((pid, cuda));
                }
            }
        }
        if let (Some(t), Some(s)) = (schema.table("ProcessStreams"), schema.table("StringIds")) {
            let sql = format!(
                "SELECT p.{}, f.value, c.value FROM {} p LEFT JOIN {} f ON f.id = p.{} \
                 LEFT JOIN {} c ON c.id = p.{}",
                t.col("globalPid"),
                t.sql_name(),
                s.sql_name(),
                t.col("filenameId"),
                s.sql_name(),
                t.col("contentId")
            );
            for (gpid, file, content) in lenient_rows(conn, &sql, |r| {
                Ok((
                    r.get::<_, Option<i64>>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                ))
            }) {
                let (Some(g), Some(content)) = (gpid, content.filter(|c| !c.is_empty())) else {
                    continue;
                };
                let file = file.unwrap_or_default();
                let which = if file.ends_with("stdout.log") {
                    "stdout".to_string()
                } else if file.ends_with("stderr.log") {
                    "stderr".to_string()
                } else {
                    format!("output {file}")
                };
                self.process_output
                    .entry(GlobalId(g).process_key())
                    .or_default()
                    .push((which, content));
            }
        }
    }

    fn load_gpus(&mut self, conn: &Connection, schema: &Schema) {
        let props: &[(&str, &'static str)] = &[
            ("busLocation", "bus_location"),
            ("uuid", "uuid"),
            ("chipName", "chip"),
            ("totalMemory", "total_memory_bytes"),
            ("smCount", "sm_count"),
            ("cuDevice", "cuda_device"),
            ("computeMajor", "compute_major"),
            ("computeMinor", "compute_minor"),
            ("pciBusId", "bus_location"),
            ("globalMemorySize", "total_memory_bytes"),
            ("numMultiprocessors", "sm_count"),
            ("computeCapabilityMajor", "compute_major"),
            ("computeCapabilityMinor", "compute_minor"),
        ];
        for table in ["TARGET_INFO_CUDA_GPU", "TARGET_INFO_GPU"] {
            let Some(t) = schema.table(table) else {
                continue;
            };
            let present: Vec<(&str, &'static str)> =
                props.iter().copied().filter(|(c, _)| t.has(c)).collect();
            let mut cols = vec![t.col("vmId"), t.col_any(&["id", "deviceId"]), t.col("name")];
            cols.extend(present.iter().map(|(c, _)| t.col(c)));
            let sql = format!("SELECT {} FROM {}", cols.join(", "), t.sql_name());
            let found = lenient_rows(conn, &sql, |r| {
                let mut meta = Vec::new();
                for (i, (_, key)) in present.iter().enumerate() {
                    use rusqlite::types::ValueRef;
                    let v = match r.get_ref(3 + i)? {
                        ValueRef::Integer(n) => Value::Int(n),
                        ValueRef::Real(f) => Value::Float(f),
                        ValueRef::Text(s) if !s.is_empty() => {
                            Value::str(String::from_utf8_lossy(s).into_owned())
                        }
                        _ => continue,
                    };
                    meta.push((*key, v));
                }
                Ok((
                    r.get::<_, Option<i64>>(0)?,
                    r.get::<_, Option<i64>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    meta,
                ))
            });
            for (vm, dev, name, meta) in found {
                let Some(dev) = dev else { continue };
                let e = self
                    .gpus
                    .entry((machine_of_vm(vm.unwrap_or(1)), dev))
                    .or_default();
                if name.as_deref().is_some_and(|n| !n.is_empty()) {
                    e.name = name;
                }
                for (k, v) in meta {
                    if !e.meta.iter().any(|(x, _)| *x == k) {
                        e.meta.push((k, v));
                    }
                }
            }
        }
    }

    /// Thread names given by NVTX (`nvtxNameOsThread`, eventType 39 rows).
    pub fn add_nvtx_thread_name(&mut self, gtid: i64, name: String) {
        self.nvtx_thread_names.insert(gtid, name);
    }

    fn host_of(&self, defs: &mut Defs, machine: i64) -> Option<StrId> {
        match self.hostnames.get(&machine) {
            Some(h) => Some(defs.intern(h)),
            None if machine != 1 => Some(defs.intern(&format!("machine {machine}"))),
            None => None,
        }
    }

    /// The host process of a global id (a globalTid or globalPid).
    pub fn process(&mut self, defs: &mut Defs, g: GlobalId) -> ProcessId {
        let key = g.process_key();
        if let Some(&p) = self.processes.get(&key) {
            return p;
        }
        let host = self.host_of(defs, g.machine());
        let mut meta = Vec::new();
        if let Some(&rank) = self.mpi_ranks.get(&key) {
            meta.push(Arg {
                key: defs.intern("mpi_rank"),
                value: Value::Int(rank),
            });
        }
        for (which, content) in self.process_output.get(&key).into_iter().flatten() {
            meta.push(Arg {
                key: defs.intern(which),
                value: Value::str(content.as_str()),
            });
        }
        let p = defs.add_process(Process {
            kind: ProcessKind::Host,
            os_pid: Some(g.pid()),
            host,
            meta,
            ..Process::default()
        });
        if let Some(n) = self.process_names.get(&key) {
            let n = defs.intern(n);
            defs.set_process_name(p, n, NamePriority::Explicit);
        }
        self.processes.insert(key, p);
        p
    }

    /// The thread track of a globalTid.
    pub fn thread(
        &mut self,
        defs: &mut Defs,
        strings: &crate::strings::Strings,
        gtid: i64,
    ) -> TrackId {
        if let Some(&t) = self.threads.get(&gtid) {
            return t;
        }
        let g = GlobalId(gtid);
        let p = self.process(defs, g);
        let th = defs.add_thread(p, Some(g.tid()), None);
        let name = self.nvtx_thread_names.get(&gtid).cloned().or_else(|| {
            self.thread_names
                .get(&gtid)
                .and_then(|(id, _)| strings.get(*id))
                .map(str::to_string)
        });
        if let Some(n) = name {
            let n = defs.intern(&n);
            defs.set_thread_name(th, n, NamePriority::Explicit);
            // Without a PROCESSES table (Windows exports), the main thread names the process.
            if g.tid() == g.pid() {
                defs.set_process_name(p, n, NamePriority::Inferred);
            }
        }
        let track = defs.thread(th).track;
        self.threads.insert(gtid, track);
        track
    }

    /// The IR process of GPU `device` on `machine`.
    pub fn device(&mut self, defs: &mut Defs, machine: i64, device: i64) -> ProcessId {
        if let Some(&p) = self.devices.get(&(machine, device)) {
            return p;
        }
        let info = self
            .gpus
            .get(&(machine, device))
            .cloned()
            .unwrap_or_default();
        let name = match &info.name {
            Some(n) => format!("GPU {device}: {n}"),
            None => format!("GPU {device}"),
        };
        let name = defs.intern(&name);
        let mut meta = Vec::new();
        for (k, v) in info.meta {
            meta.push(Arg {
                key: defs.intern(k),
                value: v,
            });
        }
        if let Some(ids) = self.cuda_ids.get(&(machine, device)) {
            // which CUDA device index each process used for this GPU (CUDA_VISIBLE_DEVICES)
            let obj: serde_json::Map<String, serde_json::Value> = ids
                .iter()
                .map(|(pid, cuda)| (pid.to_string(), serde_json::Value::from(*cuda)))
                .collect();
            meta.push(Arg {
                key: defs.intern("cuda_device_by_pid"),
                value: Value::Json(serde_json::Value::Object(obj).to_string().into()),
            });
        }
        let host = self.host_of(defs, machine);
        let p = defs.add_process(Process {
            kind: ProcessKind::Device {
                device: device.clamp(0, u32::MAX as i64) as u32,
            },
            name: Some(name),
            name_priority: NamePriority::Explicit,
            host,
            meta,
            ..Process::default()
        });
        self.devices.insert((machine, device), p);
        p
    }

    /// The track of one CUDA stream: a `GpuStream` track of the device's process, one per
    /// (host process, context, stream), named "stream N" (with its NVTX name when it has one).
    pub fn stream(
        &mut self,
        defs: &mut Defs,
        gpid: GlobalId,
        device: i64,
        context: i64,
        stream: i64,
    ) -> TrackId {
        let key = (gpid.machine(), gpid.pid(), device, context, stream);
        if let Some(&t) = self.streams.get(&key) {
            return t;
        }
        let dev = self.device(defs, gpid.machine(), device);
        let null = self
            .null_streams
            .get(&(gpid.machine(), gpid.pid(), device, context))
            == Some(&stream);
        // CUPTI writes 0xFFFFFFFF (or -1) for work tied to no stream (event and context syncs)
        let mut name = if stream == u32::MAX as i64 || stream < 0 {
            "no stream (synchronization)".to_string()
        } else {
            format!("stream {stream}")
        };
        let info = self
            .stream_info
            .get(&(gpid.machine(), gpid.pid(), context, stream))
            .copied();
        let mut notes = Vec::new();
        match info.map(|(_, flag)| flag) {
            _ if null => notes.push("default".to_string()),
            Some(2) => notes.push("non-blocking".to_string()),
            Some(3) => notes.push("null".to_string()),
            _ => {}
        }
        if let Some((prio, _)) = info.filter(|(p, _)| *p != 0) {
            notes.push(format!("priority {prio}"));
        }
        if !notes.is_empty() {
            name.push_str(&format!(" ({})", notes.join(", ")));
        }
        if let Some(n) = self.nvtx_stream_names.get(&key) {
            name = format!("{n} ({name})");
        }
        let name = defs.intern(&name);
        let t = defs.add_track(Track {
            kind: TrackKind::GpuStream {
                device: device.clamp(0, u32::MAX as i64) as u32,
                stream: stream.clamp(0, u32::MAX as i64) as u32,
            },
            process: Some(dev),
            name: Some(name),
            label: None,
            sort_index: Some(stream),
        });
        self.streams.insert(key, t);
        t
    }

    /// The process-scoped track of an IR process (instants that belong to no thread).
    pub fn process_track(&mut self, defs: &mut Defs, p: ProcessId) -> TrackId {
        *self.process_tracks.entry(p).or_insert_with(|| {
            defs.add_track(Track {
                kind: TrackKind::Process,
                process: Some(p),
                name: None,
                label: None,
                sort_index: None,
            })
        })
    }

    /// An async track named `name` of process `p` (NVTX start/end ranges of one domain).
    pub fn async_track(&mut self, defs: &mut Defs, p: ProcessId, name: StrId) -> TrackId {
        *self.async_tracks.entry((p, name)).or_insert_with(|| {
            defs.add_track(Track {
                kind: TrackKind::Async,
                process: Some(p),
                name: Some(name),
                label: None,
                sort_index: None,
            })
        })
    }

    /// At the end: streams of one device used by several processes get the pid in their name,
    /// and named threads of processes that have events are listed even without events.
    pub fn finish(&mut self, defs: &mut Defs, strings: &crate::strings::Strings) {
        let mut pids_per_device: FxHashMap<(i64, i64), Vec<i64>> = FxHashMap::default();
        for &(m, pid, dev, _, _) in self.streams.keys() {
            let v = pids_per_device.entry((m, dev)).or_default();
            if !v.contains(&pid) {
                v.push(pid);
            }
        }
        let mut shared: Vec<(StreamKey, TrackId)> = self
            .streams
            .iter()
            .filter(|((m, _, dev, _, _), _)| pids_per_device[&(*m, *dev)].len() > 1)
            .map(|(k, t)| (*k, *t))
            .collect();
        shared.sort();
        for ((_, pid, _, _, _), t) in shared {
            let old = defs.track(t).name.map(|n| defs.str(n).to_string());
            if let Some(old) = old {
                let n = defs.intern(&format!("{old} pid {pid}"));
                defs.track_mut(t).name = Some(n);
            }
        }
        let mut named: Vec<i64> = self
            .thread_names
            .keys()
            .chain(self.nvtx_thread_names.keys())
            .copied()
            .filter(|g| {
                !self.threads.contains_key(g)
                    && self.processes.contains_key(&GlobalId(*g).process_key())
            })
            .collect();
        named.sort_unstable();
        named.dedup();
        for g in named {
            self.thread(defs, strings, g);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_id_layout() {
        // machine 1, pid 111, tid 4242
        let g = GlobalId((1 << 48) | (111 << 24) | 4242);
        assert_eq!((g.machine(), g.pid(), g.tid()), (1, 111, 4242));
        assert_eq!(g.process_key(), (1 << 24) | 111);
        assert_eq!(machine_of_vm(1 << 48), 1);
        assert_eq!(machine_of_vm(1), 1);
    }
}

#[cfg(test)]
mod priority_tests {
    #[test]
    fn stream_priorities_are_signed() {
        assert_eq!(super::signed_priority(4294967295), -1);
        assert_eq!(super::signed_priority(4294967291), -5);
        assert_eq!(super::signed_priority(0), 0);
        assert_eq!(super::signed_priority(-3), -3);
    }
}
