//! GPU devices as processes of their own, with a track per stream.

use rustc_hash::FxHashMap;
use tracex_ir::{Defs, NamePriority, Process, ProcessId, ProcessKind, Track, TrackId, TrackKind};

/// CUPTI's "no stream" id, used for GPU work whose stream the input does not give.
pub const UNKNOWN_STREAM: u32 = u32::MAX;

/// Device processes and their stream tracks.
#[derive(Default)]
pub struct Devices {
    processes: FxHashMap<u32, ProcessId>,
    streams: FxHashMap<(u32, u32), TrackId>,
    process_tracks: FxHashMap<u32, TrackId>,
}

impl Devices {
    pub fn process(&mut self, defs: &mut Defs, device: u32) -> ProcessId {
        *self.processes.entry(device).or_insert_with(|| {
            let name = defs.intern(&format!("GPU {device}"));
            let p = defs.add_process(Process {
                kind: ProcessKind::Device { device },
                ..Process::default()
            });
            defs.set_process_name(p, name, NamePriority::Inferred);
            p
        })
    }

    /// The track of a stream of a device; [`UNKNOWN_STREAM`] gets the name `unknown stream`.
    pub fn stream(&mut self, defs: &mut Defs, device: u32, stream: u32) -> TrackId {
        if let Some(&t) = self.streams.get(&(device, stream)) {
            return t;
        }
        let process = self.process(defs, device);
        let name = (stream == UNKNOWN_STREAM).then(|| defs.intern("unknown stream"));
        let t = defs.add_track(Track {
            kind: TrackKind::GpuStream { device, stream },
            process: Some(process),
            name,
            label: None,
            sort_index: None,
        });
        self.streams.insert((device, stream), t);
        t
    }

    /// The device-wide track (memory operations).
    pub fn process_track(&mut self, defs: &mut Defs, device: u32) -> TrackId {
        if let Some(&t) = self.process_tracks.get(&device) {
            return t;
        }
        let process = self.process(defs, device);
        let t = defs.add_track(Track {
            kind: TrackKind::Process,
            process: Some(process),
            name: None,
            label: None,
            sort_index: None,
        });
        self.process_tracks.insert(device, t);
        t
    }
}
