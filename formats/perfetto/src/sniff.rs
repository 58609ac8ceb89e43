//! Recognising a Perfetto protobuf trace from its first bytes (after gzip, which the CLI
//! removes): a sequence of `Trace.packet` fields whose contents decode as `TracePacket`s.

use prost::Message;
use tracex_ir::{Confidence, Probe};

use crate::pb::TracePacket;
use crate::wire::{PacketReader, MAX_PACKET, PACKET_KEY};

/// Certain when the head holds packets that decode and carry fields a producer sets (a
/// timestamp, a sequence id, a payload), or begins with one packet too large for the head
/// whose first fields are valid; no for anything else (text starts with a letter, `{`, `[`).
pub fn sniff(probe: &Probe) -> Confidence {
    if probe.is_dir || probe.head.first() != Some(&PACKET_KEY) || looks_like_text(probe.head) {
        return Confidence::No;
    }
    let mut r = PacketReader::new(probe.head);
    let mut decoded = 0;
    loop {
        match r.next() {
            Ok(Ok(crate::wire::Next::Packet(_, body))) => match TracePacket::decode(&body[..]) {
                Ok(p) if meaningful(&p) => decoded += 1,
                _ => return Confidence::No,
            },
            Ok(Ok(crate::wire::Next::Torn(at))) => {
                // the head cut a packet: its first bytes must still look like one
                return match (decoded, plausible_prefix(&probe.head[at as usize..])) {
                    (0, false) => Confidence::No,
                    (0, true) => Confidence::Maybe(60),
                    _ => Confidence::Certain,
                };
            }
            Ok(Ok(crate::wire::Next::End)) => {
                return if decoded > 0 {
                    Confidence::Certain
                } else {
                    Confidence::No
                };
            }
            _ => return Confidence::No,
        }
        if decoded >= 8 {
            return Confidence::Certain;
        }
    }
}

/// Text that happens to start with a newline: no control bytes other than whitespace in its
/// first 4 KiB (protobuf keys and lengths are small numbers, so a trace has many).
fn looks_like_text(head: &[u8]) -> bool {
    !head[..head.len().min(4096)]
        .iter()
        .any(|&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r'))
}

/// A packet with at least one field a Perfetto producer writes.
fn meaningful(p: &TracePacket) -> bool {
    p.data.is_some()
        || p.timestamp.is_some()
        || p.optional_trusted_packet_sequence_id.is_some()
        || p.interned_data.is_some()
        || p.trace_packet_defaults.is_some()
        || p.tracex.is_some()
}

/// The start of a packet cut by the end of the head: a plausible length, then fields whose keys
/// decode with known wire types as far as they go.
fn plausible_prefix(bytes: &[u8]) -> bool {
    let mut buf = &bytes[1..];
    let Ok(len) = prost::encoding::decode_varint(&mut buf) else {
        return false;
    };
    if len > MAX_PACKET || (len as usize) <= buf.len() {
        return false;
    }
    let mut fields = 0;
    while buf.len() > 16 {
        let Ok((tag, wire)) = prost::encoding::decode_key(&mut buf) else {
            return false;
        };
        if tag > 10_000 {
            return false;
        }
        let ctx = prost::encoding::DecodeContext::default();
        if prost::encoding::skip_field(wire, tag, &mut buf, ctx).is_err() {
            // a payload running past the head is fine (TracePacket fields are below 200, or
            // tracex's 7351); a malformed field is not
            return matches!(wire, prost::encoding::WireType::LengthDelimited)
                && (fields > 0 || tag < 200 || tag == 7351);
        }
        fields += 1;
    }
    fields > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::trace_packet::{Data, OptionalTrustedPacketSequenceId};
    use crate::pb::TrackDescriptor;
    use crate::wire::put_packet;

    fn probe(bytes: &[u8]) -> Confidence {
        sniff(&Probe::of_bytes(bytes))
    }

    fn packet(name: &str) -> TracePacket {
        TracePacket {
            timestamp: Some(10),
            optional_trusted_packet_sequence_id: Some(
                OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(1),
            ),
            data: Some(Data::TrackDescriptor(Box::new(TrackDescriptor {
                uuid: Some(1),
                static_or_dynamic_name: Some(
                    crate::pb::track_descriptor::StaticOrDynamicName::Name(name.into()),
                ),
                ..Default::default()
            }))),
            ..Default::default()
        }
    }

    #[test]
    fn packets_and_cut_packets() {
        let mut t = Vec::new();
        put_packet(&mut t, &packet("main"));
        assert_eq!(probe(&t), Confidence::Certain);
        // one big packet cut by the end of the head
        let mut big = Vec::new();
        put_packet(&mut big, &packet(&"x".repeat(100_000)));
        assert_eq!(probe(&big[..65536]), Confidence::Maybe(60));
        // text and JSON are not traces, even when they start with a newline
        assert_eq!(probe(b"\nmain;foo 1\nmain;bar 2\n"), Confidence::No);
        assert_eq!(probe(b"{\"traceEvents\":[]}"), Confidence::No);
        assert_eq!(probe(b"SQLite format 3\0"), Confidence::No);
        assert_eq!(probe(b""), Confidence::No);
        assert_eq!(probe(&[0x0a, 0x00]), Confidence::No);
    }
}
