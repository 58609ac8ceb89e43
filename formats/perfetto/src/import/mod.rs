//! Perfetto protobuf → IR, in two passes over the (decompressed) file.
//!
//! Pass 1 reads what the whole trace shares: track descriptors (a writer may describe a track
//! after its first event, and send a descriptor again), clock snapshots, trace attributes and
//! Chrome metadata, and tracex's trace-level record. Pass 2 reads the events packet by packet
//! with each sequence's incremental state (interned data, defaults, sequence clocks,
//! incremental counters), as trace processor does, and pushes them: slices when they end (so
//! the importer is unsorted), instants, counter values, samples; flows are paired at the end.
//! Android system traces add ftrace bundles (atrace markers), process trees and GPU counters
//! (`android`).
//! Memory: descriptors, interned data, open slices and flow points.

mod android;
mod args;
mod clock;
mod events;
mod flows;
mod ordered;
mod runs;
mod sequence;
mod tally;
mod tracks;

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use prost::Message;
use rustc_hash::{FxHashMap, FxHashSet};
use tracex_ir::{Error, ImportCtx, Location, Result, Value};

use crate::diag as d;
use crate::options::ImportOptions;
use crate::pb::trace_packet::{Data, OptionalTrustedPacketSequenceId, SequenceFlags};
use crate::pb::{self, TracePacket};
use crate::wire::{Next, PacketReader};
use clock::Clocks;
use sequence::Sequence;
use tracks::TrackMap;

/// Bytes one `compressed_packets` bundle may inflate to, as much as one packet may hold; more
/// is taken for corruption or a decompression bomb (Perfetto compresses bundles of a few
/// hundred KiB).
const MAX_INFLATED: u64 = crate::wire::MAX_PACKET;

/// A packet type each pass decodes: the full `TracePacket`, or the first pass's `ScanPacket`.
trait Packet: Message + Default {
    /// The zlib-compressed packets it holds, if it is a bundle of them.
    fn compressed(&mut self) -> Option<Vec<u8>>;
}

impl Packet for TracePacket {
    fn compressed(&mut self) -> Option<Vec<u8>> {
        match self.data.take() {
            Some(Data::CompressedPackets(z)) => Some(z),
            other => {
                self.data = other;
                None
            }
        }
    }
}

impl Packet for pb::ScanPacket {
    fn compressed(&mut self) -> Option<Vec<u8>> {
        self.compressed_packets.take()
    }
}

/// One item of the packet stream, compressed packets already expanded.
enum Item<M> {
    /// A packet, with its bytes, at the byte offset of its (outer) packet.
    Packet(u64, M, Vec<u8>),
    Bad(u64, String),
    Torn(u64),
    Other(u32, u64),
}

/// Reads every packet of the file at `path`, expanding `compressed_packets` (zlib), and hands
/// each to `f`.
fn each_packet<M: Packet>(
    path: &Path,
    progress: impl Fn(u64),
    mut f: impl FnMut(Item<M>) -> Result<()>,
) -> Result<()> {
    let file = File::open(path)?;
    let mut r = PacketReader::new(BufReader::with_capacity(1 << 20, file));
    let mut n = 0u64;
    loop {
        let next = r
            .next()?
            .map_err(|e| Error::invalid(Location::Byte(e.offset), e.what))?;
        n += 1;
        if n % 4096 == 0 {
            progress(r.offset());
        }
        let (at, body) = match next {
            Next::End => return Ok(()),
            Next::Torn(at) => return f(Item::Torn(at)),
            Next::Other(field, at) => {
                f(Item::Other(field, at))?;
                continue;
            }
            Next::Packet(at, body) => (at, body),
        };
        let mut p = match M::decode(&body[..]) {
            Ok(p) => p,
            Err(e) => {
                f(Item::Bad(at, e.to_string()))?;
                continue;
            }
        };
        let Some(z) = p.compressed() else {
            f(Item::Packet(at, p, body))?;
            continue;
        };
        // inflated as a stream, one inner packet at a time, and bounded: a small bundle can
        // claim gigabytes (a decompression bomb)
        let zlib = flate2::read::ZlibDecoder::new(&z[..]).take(MAX_INFLATED + 1);
        let mut inner = PacketReader::new(BufReader::new(zlib));
        loop {
            let next = match inner.next() {
                Ok(n) => n,
                Err(e) => {
                    f(Item::Bad(
                        at,
                        format!("compressed packets do not inflate: {e}"),
                    ))?;
                    break;
                }
            };
            match next {
                Ok(Next::Packet(_, b)) => match M::decode(&b[..]) {
                    Ok(p) => f(Item::Packet(at, p, b))?,
                    Err(e) => f(Item::Bad(at, e.to_string()))?,
                },
                Ok(Next::End) => break,
                // no field has number 0: corrupt (zeros inflated from a bomb)
                Ok(Next::Other(0, _)) => {
                    f(Item::Bad(
                        at,
                        "compressed packets hold a field numbered 0".into(),
                    ))?;
                    break;
                }
                Ok(Next::Other(field, _)) => f(Item::Other(field, at))?,
                Ok(Next::Torn(_)) | Err(_) => {
                    let why = if inner.offset() > MAX_INFLATED {
                        format!("compressed packets inflate to more than {MAX_INFLATED} bytes")
                    } else {
                        "compressed packets end in the middle of a packet".into()
                    };
                    f(Item::Bad(at, why))?;
                    break;
                }
            }
        }
    }
}

/// Fields of a packet without a known payload that the schema subset does not know (payloads
/// of newer or out-of-tree kinds, such as Android's frame timeline, field 76).
fn unknown_fields(p: &TracePacket, body: &[u8]) -> Vec<u32> {
    if p.data.is_some() {
        return Vec::new();
    }
    const KNOWN: &[u32] = &[3, 8, 10, 12, 13, 41, 42, 58, 59, 79, 87, 98, 7351];
    let mut out = Vec::new();
    let mut buf = body;
    while !buf.is_empty() {
        let Ok((tag, wire)) = prost::encoding::decode_key(&mut buf) else {
            break;
        };
        if !KNOWN.contains(&tag) && !out.contains(&tag) {
            out.push(tag);
        }
        let ctx = prost::encoding::DecodeContext::default();
        if prost::encoding::skip_field(wire, tag, &mut buf, ctx).is_err() {
            break;
        }
    }
    out
}

fn sequence_id(p: &TracePacket) -> u32 {
    match p.optional_trusted_packet_sequence_id {
        Some(OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(s)) => s,
        None => 0,
    }
}

/// What pass 1 learns.
#[derive(Default)]
struct Scan {
    tracks: TrackMap,
    clocks: Clocks,
    info: Option<pb::tracex::TraceInfo>,
    meta: Vec<(String, Value)>,
    /// Track uuids that events of several sequences (writers) refer to: their begins and ends
    /// are matched in time order rather than file order.
    shared: FxHashSet<u64>,
    /// tid → tgid from the process trees, so that ftrace events before one land in their
    /// process.
    tgid: FxHashMap<i64, i64>,
}

fn scan(path: &Path, ctx: &ImportCtx) -> Result<Scan> {
    let mut s = Scan::default();
    let mut snapshots = 0;
    // per sequence: its default track; per track: the first sequence writing to it
    let mut default_track: FxHashMap<u32, u64> = FxHashMap::default();
    let mut writer: FxHashMap<u64, u32> = FxHashMap::default();
    each_packet(
        path,
        |at| ctx.progress.set_done(at),
        |item: Item<pb::ScanPacket>| {
            let Item::Packet(_, p, _) = item else {
                return Ok(());
            };
            let seq = p.trusted_packet_sequence_id.unwrap_or(0);
            let cleared = p.incremental_state_cleared == Some(true)
                || p.sequence_flags.unwrap_or(0) & SequenceFlags::SeqIncrementalStateCleared as u32
                    != 0;
            if cleared {
                default_track.remove(&seq);
            }
            if let Some(d) = p.trace_packet_defaults.and_then(|d| d.track_event_defaults) {
                match d.track_uuid {
                    Some(u) => default_track.insert(seq, u),
                    None => default_track.remove(&seq),
                };
            }
            if let Some(te) = p.track_event {
                if let Some(uuid) = te.track_uuid.or(default_track.get(&seq).copied()) {
                    if *writer.entry(uuid).or_insert(seq) != seq {
                        s.shared.insert(uuid);
                    }
                }
            }
            if let Some(tree) = &p.process_tree {
                for t in &tree.threads {
                    if let (Some(tid), Some(tgid)) = (t.tid, t.tgid) {
                        s.tgid.insert(tid.into(), tgid.into());
                    }
                }
            }
            if let Some(info) = p.tracex.as_ref().and_then(|x| x.trace.clone()) {
                s.info = Some(info);
            }
            if let Some(desc) = p.track_descriptor {
                s.tracks.describe(desc, p.tracex.and_then(|x| x.track));
            }
            if let Some(snap) = p.clock_snapshot {
                s.clocks.learn(&snap, snapshots == 0);
                snapshots += 1;
            }
            if let Some(a) = p.trace_attributes {
                for attr in a.attribute {
                    use pb::trace_attributes::attribute::Value as A;
                    let v = match attr.value {
                        Some(A::LongValue(l)) => Value::Int(l),
                        Some(A::StringValue(s)) => Value::str(s),
                        None => Value::Null,
                    };
                    s.meta.push((attr.key.unwrap_or_default(), v));
                }
            }
            if let Some(bundle) = p.chrome_events {
                for m in bundle.metadata {
                    use pb::chrome_metadata::Value as M;
                    let v = match m.value {
                        Some(M::StringValue(s)) => Value::str(s),
                        Some(M::BoolValue(b)) => Value::Bool(b),
                        Some(M::IntValue(i)) => Value::Int(i),
                        Some(M::JsonValue(j)) => Value::Json(j.into()),
                        None => Value::Null,
                    };
                    s.meta.push((m.name.unwrap_or_default(), v));
                }
            }
            Ok(())
        },
    )?;
    Ok(s)
}

/// Reads the Perfetto trace at `path` (a plain file: the CLI decompresses gzip first).
pub fn import(path: &Path, _opts: &ImportOptions, ctx: &mut ImportCtx) -> Result<()> {
    let len = std::fs::metadata(path)?.len();
    ctx.progress.set_total(2 * len);
    let scan = scan(path, ctx)?;
    let mut st = events::State::new(scan.tracks, scan.clocks, scan.shared);
    st.android.tgid = scan.tgid;
    // the trace: tracex's own record when it wrote the file, else the attributes and metadata
    match &scan.info {
        Some(info) => {
            st.tracex = true;
            st.offset = info.offset_ns.unwrap_or(0);
            st.flow_default = info.flow_default.as_ref().map(|f| {
                let name = f.name.as_deref().map(|n| ctx.defs.intern(n));
                let cat = f.category.as_deref().map(|c| ctx.defs.intern(c));
                (name, cat)
            });
            ctx.defs.clock.origin_unix_ns = info.origin_unix_ns;
            ctx.defs.clock.domain = info.clock_domain.as_deref().map(|c| ctx.defs.intern(c));
            let meta = args::typed_args(ctx.defs, &info.meta);
            for a in meta {
                tracex_ir::defs::set_arg(&mut ctx.defs.meta, a.key, a.value);
            }
        }
        None => {
            ctx.defs.clock.origin_unix_ns = st
                .clocks
                .realtime_offset()
                .and_then(|o| i64::try_from(o).ok());
            for (k, v) in scan.meta {
                ctx.defs.set_meta(&k, v);
            }
        }
    }
    let mut seqs: Vec<Sequence> = Vec::new();
    let mut seq_index: FxHashMap<u32, usize> = FxHashMap::default();
    each_packet(
        path,
        |at| ctx.progress.set_done(len + at),
        |item: Item<TracePacket>| match item {
            Item::Packet(at, p, body) => {
                let unknown = unknown_fields(&p, &body);
                let id = sequence_id(&p);
                let i = *seq_index.entry(id).or_insert_with(|| {
                    seqs.push(Sequence::default());
                    seqs.len() - 1
                });
                st.packet(ctx, &mut seqs[i], at, p, unknown)
            }
            Item::Bad(at, e) => {
                ctx.diag
                    .record_detail(&d::IMPORT_BAD_PACKET, Location::Byte(at), e);
                Ok(())
            }
            Item::Torn(at) => {
                ctx.diag.record(&d::IMPORT_TORN, Location::Byte(at));
                Ok(())
            }
            Item::Other(field, at) => {
                ctx.diag.record_detail(
                    &d::IMPORT_TRACE_FIELD,
                    Location::Byte(at),
                    format!("field {field}"),
                );
                Ok(())
            }
        },
    )?;
    st.finish(ctx)
}
