//! Exported pids and tids: integers within `u32`. An OS id that fits and is not taken is kept;
//! other ids (strings, ids beyond `u32`, missing ids, GPU streams, overflow lanes) get a
//! synthetic one. Where the exported id does not say everything about the original, the first
//! name record of the process or thread carries tracex's identity record in its args, so that
//! a re-import restores the original exactly.

use rustc_hash::{FxHashMap, FxHashSet};
use tracex_ir::trackmap::TrackMap;
use tracex_ir::{Defs, ProcessId, ProcessKind, StrId, TrackId, TrackKind};

use super::events::Events;
use super::json::{push_int, push_str};

/// First synthetic pid/tid: above every Linux pid and tid (`PID_MAX_LIMIT` is 2^22), and small
/// enough for tools that pair ids as floating-point numbers (FlameGraph's chrome collapser).
pub const SYNTHETIC_BASE: i64 = 1 << 22;

#[derive(Default)]
pub struct Ids {
    pids: FxHashMap<ProcessId, i64>,
    used_pids: FxHashSet<i64>,
    next_pid: i64,
    tids: TrackMap<(i64, i64)>,
    used_tids: FxHashSet<(i64, i64)>,
    next_tid: i64,
    global_pid: Option<i64>,
    /// Name records already written with an identity: the name then (`None`: made up).
    pub process_named: FxHashMap<ProcessId, Option<StrId>>,
    pub track_named: FxHashMap<TrackId, Option<StrId>>,
}

/// Appends `,"key":<int or null>`.
fn opt_int(a: &mut Vec<u8>, key: &str, v: Option<i64>) {
    a.extend_from_slice(b",\"");
    a.extend_from_slice(key.as_bytes());
    a.extend_from_slice(b"\":");
    match v {
        Some(x) => push_int(a, x),
        None => a.extend_from_slice(b"null"),
    }
}

fn opt_label(a: &mut Vec<u8>, key: &str, defs: &Defs, v: Option<StrId>) {
    if let Some(l) = v {
        a.extend_from_slice(b",\"");
        a.extend_from_slice(key.as_bytes());
        a.extend_from_slice(b"\":");
        push_str(a, defs.str(l));
    }
}

/// Closes an identity object begun with a leading `,`: `{...}`, with `unnamed` when the name
/// beside it is made up.
fn close(mut a: Vec<u8>, unnamed: bool) -> Vec<u8> {
    if unnamed {
        a.extend_from_slice(b",\"unnamed\":true");
    }
    if a.first() == Some(&b',') {
        a[0] = b'{';
    } else {
        a.insert(0, b'{');
    }
    a.push(b'}');
    a
}

impl Ids {
    pub fn new() -> Ids {
        Ids {
            next_pid: SYNTHETIC_BASE,
            next_tid: SYNTHETIC_BASE,
            ..Ids::default()
        }
    }

    fn synthetic_pid(&mut self) -> i64 {
        while self.used_pids.contains(&self.next_pid) {
            self.next_pid += 1;
        }
        self.next_pid += 1;
        self.next_pid - 1
    }

    fn synthetic_tid(&mut self, pid: i64) -> i64 {
        while self.used_tids.contains(&(pid, self.next_tid)) {
            self.next_tid += 1;
        }
        self.next_tid += 1;
        self.next_tid - 1
    }

    /// Whether tracex gave the track an id (it was written).
    pub fn has_track(&self, t: TrackId) -> bool {
        self.tids.contains(t)
    }

    pub fn has_process(&self, p: ProcessId) -> bool {
        self.pids.contains_key(&p)
    }

    /// Tracks written as threads that are not threads (GPU streams, overflow lanes), sorted.
    pub fn other_tracks(&self, defs: &Defs) -> Vec<(TrackId, (i64, i64))> {
        let mut v: Vec<(TrackId, (i64, i64))> = self
            .tids
            .iter()
            .filter(|(t, _)| {
                matches!(
                    defs.track(*t).kind,
                    TrackKind::GpuStream { .. } | TrackKind::Overflow { .. }
                )
            })
            .map(|(t, ids)| (t, *ids))
            .collect();
        v.sort();
        v
    }

    /// The exported pid of a process; writes its name record with its identity on first use
    /// when the pid alone does not say who it is.
    pub fn pid(&mut self, defs: &Defs, ev: &mut Events, p: ProcessId) -> i64 {
        if let Some(&x) = self.pids.get(&p) {
            return x;
        }
        let proc = defs.process(p);
        let label_int = proc.label.and_then(|l| defs.str(l).parse::<i64>().ok());
        let pid = match proc.os_pid.or(label_int) {
            Some(c) if (0..=u32::MAX as i64).contains(&c) && !self.used_pids.contains(&c) => c,
            _ => self.synthetic_pid(),
        };
        self.used_pids.insert(pid);
        self.pids.insert(p, pid);
        let device = match proc.kind {
            ProcessKind::Device { device } => Some(device),
            ProcessKind::Host => None,
        };
        if proc.os_pid != Some(pid)
            || proc.label.is_some()
            || device.is_some()
            || proc.host.is_some()
        {
            let mut a = Vec::new();
            opt_int(&mut a, "pid", proc.os_pid);
            opt_label(&mut a, "label", defs, proc.label);
            if let Some(dev) = device {
                opt_int(&mut a, "device", Some(dev as i64));
            }
            opt_label(&mut a, "host", defs, proc.host);
            let shown = match (proc.name, proc.label, proc.os_pid) {
                (Some(n), _, _) => defs.str(n).to_string(),
                (None, Some(l), _) => defs.str(l).to_string(),
                (None, None, Some(x)) => format!("process {x}"),
                (None, None, None) => defs.process_display_name(p),
            };
            ev.name(pid, None, &shown, Some(&close(a, proc.name.is_none())));
            self.process_named.insert(p, proc.name);
        }
        pid
    }

    /// The exported (pid, tid) of a track; writes name records with identities on first use
    /// where needed.
    pub fn ids(&mut self, defs: &Defs, ev: &mut Events, track: TrackId) -> (i64, i64) {
        if let Some(&x) = self.tids.get(track) {
            return x;
        }
        let t = defs.track(track);
        let ids = match t.kind {
            TrackKind::Thread(th) => {
                let thread = defs.thread(th);
                let pid = self.pid(defs, ev, thread.process);
                let label_int = thread.label.and_then(|l| defs.str(l).parse::<i64>().ok());
                let tid = match thread.os_tid.or(label_int) {
                    Some(c)
                        if (0..=u32::MAX as i64).contains(&c)
                            && !self.used_tids.contains(&(pid, c)) =>
                    {
                        c
                    }
                    _ => self.synthetic_tid(pid),
                };
                if thread.os_tid != Some(tid) || thread.label.is_some() {
                    let mut a = Vec::new();
                    opt_int(&mut a, "tid", thread.os_tid);
                    opt_label(&mut a, "label", defs, thread.label);
                    let shown = match thread.name {
                        Some(n) => defs.str(n).to_string(),
                        None => defs.track_display_name(track),
                    };
                    ev.name(
                        pid,
                        Some(tid),
                        &shown,
                        Some(&close(a, thread.name.is_none())),
                    );
                    self.track_named.insert(track, thread.name);
                }
                (pid, tid)
            }
            TrackKind::GpuStream { device, stream } => {
                let pid = match t.process {
                    Some(p) => self.pid(defs, ev, p),
                    None => self.global_pid(ev),
                };
                let tid = if !self.used_tids.contains(&(pid, stream as i64)) {
                    stream as i64
                } else {
                    self.synthetic_tid(pid)
                };
                let mut a = format!(",\"gpu_stream\":{{\"device\":{device},\"stream\":{stream}}}")
                    .into_bytes();
                opt_label(&mut a, "label", defs, t.label);
                let shown = match t.name {
                    Some(n) => defs.str(n).to_string(),
                    None => defs.track_display_name(track),
                };
                ev.name(pid, Some(tid), &shown, Some(&close(a, t.name.is_none())));
                self.track_named.insert(track, t.name);
                (pid, tid)
            }
            TrackKind::Overflow { of, .. }
                if defs.track(defs.root_track(of)).kind == TrackKind::Async =>
            {
                // async lanes are told apart by their id, not by a thread
                self.ids(defs, ev, of)
            }
            TrackKind::Overflow { of, level } => {
                let (pid, root_tid) = self.ids(defs, ev, of);
                let tid = self.synthetic_tid(pid);
                let a = format!(",\"overflow_of\":{root_tid},\"level\":{level}").into_bytes();
                let shown = defs.track_display_name(track);
                ev.name(pid, Some(tid), &shown, Some(&close(a, true)));
                self.track_named.insert(track, None);
                (pid, tid)
            }
            TrackKind::Async | TrackKind::Process => {
                let pid = match t.process {
                    Some(p) => self.pid(defs, ev, p),
                    None => self.global_pid(ev),
                };
                // Async and process-scoped events are keyed by pid; tid = pid as for a main thread.
                (pid, pid)
            }
            TrackKind::Global => (0, 0),
        };
        self.used_tids.insert(ids);
        self.tids.insert(track, ids);
        ids
    }

    /// A process for things that have none (global counters).
    pub fn global_pid(&mut self, ev: &mut Events) -> i64 {
        if let Some(p) = self.global_pid {
            return p;
        }
        let pid = self.synthetic_pid();
        self.used_pids.insert(pid);
        self.global_pid = Some(pid);
        ev.name(
            pid,
            None,
            "Global",
            Some(b"{\"pid\":null,\"global\":true,\"unnamed\":true}"),
        );
        pid
    }
}
