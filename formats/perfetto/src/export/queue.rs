//! Packets on their way out: built as [`Packet`]s, held in a short queue while flow points may
//! still be attached to them (the events of the current timestamp), then encoded in order onto
//! the one packet sequence tracex writes, with timestamps as deltas on an incremental clock.
//! Packets are encoded on the exporter's thread; the bytes are written on a thread of their own
//! ([`Encoder`]).

use std::collections::VecDeque;
use std::io::{self, Write};

use flate2::write::GzEncoder;
use tracex_ir::io::{BackgroundWriter, OutFile, OutputTarget};

use super::event::Packet;
use crate::pb::trace_packet::{OptionalTrustedPacketSequenceId, SequenceFlags};
use crate::pb::BuiltinClock;

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
    /// Held inline: moving a packet costs less than allocating and freeing a box for it (on
    /// two threads).
    pub packet: Packet,
}

/// Encoded bytes handed to the writer at a time.
const CHUNK: usize = 1 << 20;

/// Encodes packets ([`Packet::put`]) into a buffer on the exporter's thread and hands the bytes
/// to a [`BackgroundWriter`], which writes (and compresses) them on a thread of its own. With
/// track events encoded by hand, encoding costs less than handing each packet to another
/// thread did (moving it, then freeing it there). Dropped unfinished (a failed conversion), the
/// writer waits for its thread, and its output is dropped uncommitted.
struct Encoder {
    buf: Vec<u8>,
    out: Option<BackgroundWriter<Target>>,
    bytes: u64,
}

impl Encoder {
    fn new(target: Target) -> Encoder {
        Encoder {
            buf: Vec::with_capacity(CHUNK + (CHUNK >> 2)),
            out: Some(BackgroundWriter::new(target)),
            bytes: 0,
        }
    }

    fn push(&mut self, p: &Packet) -> io::Result<()> {
        p.put(&mut self.buf);
        if self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| io::Error::other("encoder already finished"))?;
        out.write_all(&self.buf)?;
        self.bytes += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Everything encoded and written: the output, to be completed, and its length.
    fn finish(&mut self) -> io::Result<(Target, u64)> {
        self.flush()?;
        let out = self.out.take().expect("flushed");
        Ok((out.finish()?, self.bytes))
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
    pub fn push(&mut self, ts: Option<i64>, packet: impl Into<Packet>) -> u64 {
        self.items.push_back(Queued {
            ts,
            absolute: false,
            packet: packet.into(),
        });
        self.encoded + self.items.len() as u64 - 1
    }

    /// Appends a packet whose time is written absolute on BOOTTIME.
    pub fn push_absolute(&mut self, ts: i64, packet: impl Into<Packet>) {
        self.items.push_back(Queued {
            ts: Some(ts),
            absolute: true,
            packet: packet.into(),
        });
    }

    /// The packet numbered `n`, if it is still queued.
    pub fn get_mut(&mut self, n: u64) -> Option<&mut Packet> {
        let i = n.checked_sub(self.encoded)?;
        self.items.get_mut(i as usize).map(|q| &mut q.packet)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Marks the delta clock as starting at `ts` (the clock snapshot's value).
    pub fn start_clock(&mut self, ts: i64) {
        self.last_ts = Some(ts);
    }

    /// Encodes the oldest `n` queued packets. They are encoded where they lie, then dropped:
    /// moving each out of the queue first was a tenth of the writer's time (perf, nsys 1M).
    pub fn encode(&mut self, n: usize) -> io::Result<()> {
        let n = n.min(self.items.len());
        for q in self.items.range_mut(..n) {
            let Queued {
                ts,
                absolute,
                packet,
            } = q;
            let (ts, absolute) = (*ts, *absolute);
            let pb = &mut packet.pb;
            pb.optional_trusted_packet_sequence_id = Some(
                OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(SEQUENCE),
            );
            if let Some(t) = ts {
                match self.last_ts {
                    Some(last) if !absolute && t >= last => {
                        pb.timestamp = Some((t - last) as u64);
                        self.last_ts = Some(t);
                    }
                    _ => {
                        pb.timestamp = Some(t.max(0) as u64);
                        pb.timestamp_clock_id = Some(ABSOLUTE_CLOCK);
                    }
                }
            }
            self.out.push(packet)?;
        }
        self.items.drain(..n);
        self.encoded += n as u64;
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
