//! Packets on their way out: built as prost structs, held in a short queue while flow points may
//! still be attached to them (the events of the current timestamp), then encoded in order onto
//! the one packet sequence tracex writes, with timestamps as deltas on an incremental clock.
//! Encoding and writing run on threads of their own ([`Encoder`]); the exporter's thread only
//! builds packets.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

use flate2::write::GzEncoder;
use tracex_ir::io::{BackgroundWriter, OutFile, OutputTarget};

use crate::pb::trace_packet::{OptionalTrustedPacketSequenceId, SequenceFlags};
use crate::pb::{BuiltinClock, TracePacket};
use crate::wire::put_packet;

/// The sequence every packet tracex writes belongs to.
pub const SEQUENCE: u32 = 1;
/// The sequence-scoped clock of event timestamps: ns, incremental (each timestamp a delta from
/// the previous one), defined against BOOTTIME by the first clock snapshot.
pub const DELTA_CLOCK: u32 = 64;
/// Packets whose time goes backwards are written on BOOTTIME, absolute.
pub const ABSOLUTE_CLOCK: u32 = BuiltinClock::Boottime as u32;

/// Where the encoded bytes go: a file (or stdout), gzip-compressed or not, written on a
/// background thread.
enum Target {
    Plain(OutFile),
    // boxed: the encoder's state is large (zlib-rs) and the enum is moved into the writer thread
    Gz(Box<GzEncoder<OutFile>>),
}

impl Write for Target {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Target::Plain(w) => w.write(buf),
            Target::Gz(w) => w.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Target::Plain(w) => w.flush(),
            Target::Gz(w) => w.flush(),
        }
    }
}

/// A packet in the queue: its time (Perfetto time, ns) and whether that time must be written
/// absolute (samples without a time).
pub struct Queued {
    pub ts: Option<i64>,
    pub absolute: bool,
    /// Boxed: a packet is a large struct, and the queue moves its entries.
    pub packet: Box<TracePacket>,
}

/// Packets per batch handed to the encoder thread.
const BATCH: usize = 1024;

/// Encodes packets (prost) and writes them on a thread of its own, fed batches of finished
/// packets: encoding was a third of the exporter thread's time on the nsys benchmark (perf),
/// and that thread is the conversion's critical path. Dropped unfinished (a failed
/// conversion), it waits for the thread, whose output is dropped uncommitted.
// the packets come boxed from the queue; unboxing them would copy each large struct
#[allow(clippy::vec_box)]
struct Encoder {
    batch: Vec<Box<TracePacket>>,
    tx: Option<SyncSender<Vec<Box<TracePacket>>>>,
    handle: Option<JoinHandle<io::Result<(Target, u64)>>>,
}

impl Encoder {
    fn new(target: Target) -> Encoder {
        let (tx, rx) = sync_channel::<Vec<Box<TracePacket>>>(8);
        let handle = std::thread::spawn(move || {
            let mut out = BackgroundWriter::new(target);
            let mut buf = Vec::with_capacity(1 << 20);
            let mut bytes = 0u64;
            for batch in rx {
                for p in batch {
                    put_packet(&mut buf, &p);
                }
                if buf.len() >= 1 << 20 {
                    out.write_all(&buf)?;
                    bytes += buf.len() as u64;
                    buf.clear();
                }
            }
            out.write_all(&buf)?;
            bytes += buf.len() as u64;
            Ok((out.finish()?, bytes))
        });
        Encoder {
            batch: Vec::with_capacity(BATCH),
            tx: Some(tx),
            handle: Some(handle),
        }
    }

    fn push(&mut self, p: Box<TracePacket>) -> io::Result<()> {
        self.batch.push(p);
        if self.batch.len() >= BATCH {
            self.send()?;
        }
        Ok(())
    }

    fn send(&mut self) -> io::Result<()> {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(batch).is_ok());
        if !sent {
            // the thread stopped on an error: report it
            self.join()?;
            return Err(io::Error::other("the encoder thread stopped"));
        }
        Ok(())
    }

    fn join(&mut self) -> io::Result<(Target, u64)> {
        self.tx = None;
        match self.handle.take() {
            Some(h) => h
                .join()
                .map_err(|_| io::Error::other("the encoder thread panicked"))?,
            None => Err(io::Error::other("encoder already finished")),
        }
    }

    /// Everything encoded and written: the output, to be completed, and its length.
    fn finish(&mut self) -> io::Result<(Target, u64)> {
        self.send()?;
        self.join()
    }
}

impl Drop for Encoder {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

pub struct Queue {
    out: Encoder,
    items: VecDeque<Queued>,
    /// Packets encoded so far: queue position `i` is packet number `encoded + i`.
    encoded: u64,
    /// Last time written on the incremental clock.
    last_ts: Option<i64>,
    pub bytes: u64,
}

impl Queue {
    pub fn create(target: &OutputTarget, gzip: bool, level: u32) -> io::Result<Queue> {
        let file = OutFile::create(target)?;
        let target = if gzip {
            Target::Gz(Box::new(GzEncoder::new(
                file,
                flate2::Compression::new(level.min(9)),
            )))
        } else {
            Target::Plain(file)
        };
        Ok(Queue {
            out: Encoder::new(target),
            items: VecDeque::new(),
            encoded: 0,
            last_ts: None,
            bytes: 0,
        })
    }

    /// Appends a packet; returns its number (valid for [`Queue::get_mut`] until it is encoded).
    pub fn push(&mut self, ts: Option<i64>, packet: TracePacket) -> u64 {
        self.items.push_back(Queued {
            ts,
            absolute: false,
            packet: Box::new(packet),
        });
        self.encoded + self.items.len() as u64 - 1
    }

    /// Appends a packet whose time is written absolute on BOOTTIME.
    pub fn push_absolute(&mut self, ts: i64, packet: TracePacket) {
        self.items.push_back(Queued {
            ts: Some(ts),
            absolute: true,
            packet: Box::new(packet),
        });
    }

    /// The packet numbered `n`, if it is still queued.
    pub fn get_mut(&mut self, n: u64) -> Option<&mut TracePacket> {
        let i = n.checked_sub(self.encoded)?;
        self.items.get_mut(i as usize).map(|q| &mut *q.packet)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Marks the delta clock as starting at `ts` (the clock snapshot's value).
    pub fn start_clock(&mut self, ts: i64) {
        self.last_ts = Some(ts);
    }

    /// Encodes the oldest `n` queued packets.
    pub fn encode(&mut self, n: usize) -> io::Result<()> {
        for _ in 0..n.min(self.items.len()) {
            let Queued {
                ts,
                absolute,
                mut packet,
            } = self.items.pop_front().expect("counted");
            self.encoded += 1;
            packet.optional_trusted_packet_sequence_id = Some(
                OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(SEQUENCE),
            );
            if let Some(t) = ts {
                match self.last_ts {
                    Some(last) if !absolute && t >= last => {
                        packet.timestamp = Some((t - last) as u64);
                        self.last_ts = Some(t);
                    }
                    _ => {
                        packet.timestamp = Some(t.max(0) as u64);
                        packet.timestamp_clock_id = Some(ABSOLUTE_CLOCK);
                    }
                }
            }
            self.out.push(packet)?;
        }
        Ok(())
    }

    /// Encodes everything queued.
    pub fn encode_all(&mut self) -> io::Result<()> {
        self.encode(self.items.len())
    }

    /// Encodes what is left, completes the file and moves it into place.
    pub fn finish(&mut self) -> io::Result<()> {
        self.encode_all()?;
        let (out, bytes) = self.out.finish()?;
        self.bytes = bytes;
        match out {
            Target::Plain(f) => f.commit(),
            Target::Gz(g) => g.finish()?.commit(),
        }
    }
}

/// Sequence flags of a packet that refers to interned data or defaults.
pub const NEEDS_STATE: u32 = SequenceFlags::SeqNeedsIncrementalState as u32;
/// Sequence flags of the first packet: the incremental state starts empty here.
pub const STATE_CLEARED: u32 = SequenceFlags::SeqIncrementalStateCleared as u32;
