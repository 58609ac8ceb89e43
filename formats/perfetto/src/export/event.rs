//! The packets tracex writes, and the encoder of their hot part: a `TrackEvent` is encoded by
//! hand, straight from this small struct into the output buffer, with its debug annotations
//! encoded once when the event is built. Everything else in a packet (descriptors, interned
//! data, samples, tracex's extension) is rare and goes through prost.
//!
//! Why by hand: on the nsys benchmark (1M kernels), building prost's `TrackEvent` and
//! `DebugAnnotation` structs, moving them and prost's `encoded_len` passes over them were a
//! quarter of the writer's CPU time (perf); see the commit that introduced this file for the
//! measurements of both paths.

use prost::encoding::encoded_len_varint;
use prost::Message;

use crate::pb::track_event::{CounterValueField, LegacyEvent};
use crate::pb::TracePacket;

// Wire types.
const VARINT: u32 = 0;
const I64: u32 = 1;
const LEN: u32 = 2;

// TracePacket.track_event.
const PACKET_TRACK_EVENT: u32 = 11;

// TrackEvent fields tracex writes (numbers of trackevent.proto).
const CATEGORY_IIDS: u32 = 3;
const DEBUG_ANNOTATIONS: u32 = 4;
const LEGACY_EVENT: u32 = 6;
const TYPE: u32 = 9;
const NAME_IID: u32 = 10;
const TRACK_UUID: u32 = 11;
const EXTRA_COUNTER_VALUES: u32 = 12;
const COUNTER_VALUE: u32 = 30;
const EXTRA_COUNTER_TRACK_UUIDS: u32 = 31;
const DOUBLE_COUNTER_VALUE: u32 = 44;
const FLOW_IDS: u32 = 47;
const TERMINATING_FLOW_IDS: u32 = 48;
const CALLSTACK_IID: u32 = 56;

// DebugAnnotation fields.
const DA_NAME_IID: u32 = 1;
const DA_BOOL: u32 = 2;
const DA_UINT: u32 = 3;
const DA_INT: u32 = 4;
const DA_DOUBLE: u32 = 5;
const DA_STRING: u32 = 6;
const DA_LEGACY_JSON: u32 = 9;
const DA_STRING_IID: u32 = 17;

/// Appends `v` as a varint. prost's `encode_varint` writes through `BufMut` one byte at a time,
/// each with its own capacity check, and is not inlined: with its callers, a tenth of the
/// `.pftrace` writer's instructions (callgrind, nsys 250k). Most values here (keys, iids,
/// lengths) take one or two bytes, written inline as arrays of known size.
#[inline(always)]
fn encode_varint(v: u64, buf: &mut Vec<u8>) {
    if v < 0x80 {
        buf.push(v as u8);
    } else if v < 0x4000 {
        buf.extend_from_slice(&[v as u8 | 0x80, (v >> 7) as u8]);
    } else {
        encode_long_varint(v, buf);
    }
}

/// [`encode_varint`] of 3 bytes or more: all ten copied at once, then cut to length.
fn encode_long_varint(v: u64, buf: &mut Vec<u8>) {
    let (bytes, n) = varint_bytes(v);
    let len = buf.len() + n;
    buf.extend_from_slice(&bytes);
    buf.truncate(len);
}

/// The varint of `v` and its length.
fn varint_bytes(mut v: u64) -> ([u8; 10], usize) {
    let mut bytes = [0u8; 10];
    let mut n = 0;
    while v >= 0x80 {
        bytes[n] = v as u8 | 0x80;
        v >>= 7;
        n += 1;
    }
    bytes[n] = v as u8;
    (bytes, n + 1)
}

fn key(field: u32, wire: u32) -> u64 {
    u64::from(field << 3 | wire)
}

fn key_len(field: u32) -> usize {
    encoded_len_varint(key(field, VARINT))
}

fn put_varint(buf: &mut Vec<u8>, field: u32, v: u64) {
    encode_varint(key(field, VARINT), buf);
    encode_varint(v, buf);
}

fn varint_len(field: u32, v: u64) -> usize {
    key_len(field) + encoded_len_varint(v)
}

fn put_fixed64(buf: &mut Vec<u8>, field: u32, v: u64) {
    encode_varint(key(field, I64), buf);
    buf.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(buf: &mut Vec<u8>, field: u32, b: &[u8]) {
    encode_varint(key(field, LEN), buf);
    encode_varint(b.len() as u64, buf);
    buf.extend_from_slice(b);
}

/// The TrackEvent fields tracex writes. Absent fields are not written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrackEvent {
    pub r#type: Option<i32>,
    pub track_uuid: Option<u64>,
    pub name_iid: Option<u64>,
    pub category_iid: Option<u64>,
    pub callstack_iid: Option<u64>,
    pub counter: Option<CounterValueField>,
    /// One extra counter value sampled at the event (the thread-time counter): (track, value).
    pub extra_counter: Option<(u64, i64)>,
    pub flow_ids: Vec<u64>,
    pub terminating_flow_ids: Vec<u64>,
    /// The `debug_annotations` fields, encoded (keys and lengths included): see [`Annotations`].
    pub annotations: Vec<u8>,
    pub legacy_event: Option<Box<LegacyEvent>>,
}

impl TrackEvent {
    fn encoded_len(&self) -> usize {
        let opt = |f: u32, v: Option<u64>| v.map_or(0, |v| varint_len(f, v));
        let mut n = opt(TYPE, self.r#type.map(|t| t as u64))
            + opt(TRACK_UUID, self.track_uuid)
            + opt(NAME_IID, self.name_iid)
            + opt(CATEGORY_IIDS, self.category_iid)
            + opt(CALLSTACK_IID, self.callstack_iid)
            + self.annotations.len()
            + (key_len(FLOW_IDS) + 8) * self.flow_ids.len()
            + (key_len(TERMINATING_FLOW_IDS) + 8) * self.terminating_flow_ids.len();
        n += match self.counter {
            Some(CounterValueField::CounterValue(v)) => varint_len(COUNTER_VALUE, v as u64),
            Some(CounterValueField::DoubleCounterValue(_)) => key_len(DOUBLE_COUNTER_VALUE) + 8,
            None => 0,
        };
        if let Some((track, v)) = self.extra_counter {
            n += varint_len(EXTRA_COUNTER_TRACK_UUIDS, track)
                + varint_len(EXTRA_COUNTER_VALUES, v as u64);
        }
        if let Some(l) = &self.legacy_event {
            let len = l.encoded_len();
            n += key_len(LEGACY_EVENT) + encoded_len_varint(len as u64) + len;
        }
        n
    }

    fn encode(&self, buf: &mut Vec<u8>) {
        if let Some(c) = self.category_iid {
            put_varint(buf, CATEGORY_IIDS, c);
        }
        buf.extend_from_slice(&self.annotations);
        if let Some(l) = &self.legacy_event {
            encode_varint(key(LEGACY_EVENT, LEN), buf);
            l.encode_length_delimited(buf)
                .expect("a Vec grows as needed");
        }
        if let Some(t) = self.r#type {
            put_varint(buf, TYPE, t as u64);
        }
        if let Some(n) = self.name_iid {
            put_varint(buf, NAME_IID, n);
        }
        if let Some(t) = self.track_uuid {
            put_varint(buf, TRACK_UUID, t);
        }
        if let Some((track, v)) = self.extra_counter {
            put_varint(buf, EXTRA_COUNTER_VALUES, v as u64);
            put_varint(buf, EXTRA_COUNTER_TRACK_UUIDS, track);
        }
        match self.counter {
            Some(CounterValueField::CounterValue(v)) => put_varint(buf, COUNTER_VALUE, v as u64),
            Some(CounterValueField::DoubleCounterValue(v)) => {
                put_fixed64(buf, DOUBLE_COUNTER_VALUE, v.to_bits())
            }
            None => {}
        }
        for &f in &self.flow_ids {
            put_fixed64(buf, FLOW_IDS, f);
        }
        for &f in &self.terminating_flow_ids {
            put_fixed64(buf, TERMINATING_FLOW_IDS, f);
        }
        if let Some(c) = self.callstack_iid {
            put_varint(buf, CALLSTACK_IID, c);
        }
    }
}

/// Debug annotations encoded as they are added, as the `debug_annotations` fields of a
/// TrackEvent: scalar ones by hand; JSON ones, which are nested, from their cached encoding.
#[derive(Default)]
pub struct Annotations {
    pub buf: Vec<u8>,
}

/// A scalar annotation value.
#[derive(Clone, Copy)]
pub enum Scalar<'a> {
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    Str(&'a str),
    StrIid(u64),
    Json(&'a str),
}

impl Annotations {
    /// Room for `n` typical annotations (a name iid and a short value each), so that the
    /// buffer rarely grows.
    pub fn with_capacity(n: usize) -> Annotations {
        Annotations {
            buf: Vec::with_capacity(n * 16),
        }
    }

    /// Appends an annotation named by interned key `name`.
    pub fn scalar(&mut self, name: u64, v: Scalar<'_>) {
        let bytes_len = |f: u32, n: usize| key_len(f) + encoded_len_varint(n as u64) + n;
        let value_len = match v {
            Scalar::Bool(b) => varint_len(DA_BOOL, b as u64),
            Scalar::Int(i) => varint_len(DA_INT, i as u64),
            Scalar::UInt(u) => varint_len(DA_UINT, u),
            Scalar::Double(_) => key_len(DA_DOUBLE) + 8,
            Scalar::Str(t) => bytes_len(DA_STRING, t.len()),
            Scalar::StrIid(i) => varint_len(DA_STRING_IID, i),
            Scalar::Json(t) => bytes_len(DA_LEGACY_JSON, t.len()),
        };
        let b = &mut self.buf;
        start_annotation(b, name, value_len);
        match v {
            Scalar::Bool(x) => put_varint(b, DA_BOOL, x as u64),
            Scalar::Int(i) => put_varint(b, DA_INT, i as u64),
            Scalar::UInt(u) => put_varint(b, DA_UINT, u),
            Scalar::Double(f) => put_fixed64(b, DA_DOUBLE, f.to_bits()),
            Scalar::Str(t) => put_bytes(b, DA_STRING, t.as_bytes()),
            Scalar::StrIid(i) => put_varint(b, DA_STRING_IID, i),
            Scalar::Json(t) => put_bytes(b, DA_LEGACY_JSON, t.as_bytes()),
        }
    }

    /// Appends an annotation named by interned key `name` whose other fields are `body`,
    /// encoded (a `DebugAnnotation` without name, as prost encodes it).
    pub fn encoded(&mut self, name: u64, body: &[u8]) {
        start_annotation(&mut self.buf, name, body.len());
        self.buf.extend_from_slice(body);
    }
}

/// The key, length and name of an annotation whose other fields take `rest` bytes.
fn start_annotation(buf: &mut Vec<u8>, name: u64, rest: usize) {
    encode_varint(key(DEBUG_ANNOTATIONS, LEN), buf);
    encode_varint((varint_len(DA_NAME_IID, name) + rest) as u64, buf);
    put_varint(buf, DA_NAME_IID, name);
}

/// A packet as the exporter queues it: prost's `TracePacket` for everything but the track
/// event, which is encoded by hand.
#[derive(Default)]
pub struct Packet {
    pub pb: TracePacket,
    pub event: Option<TrackEvent>,
}

impl From<TracePacket> for Packet {
    fn from(pb: TracePacket) -> Packet {
        Packet { pb, event: None }
    }
}

impl Packet {
    /// A packet carrying track event `ev`, with the rest of `pb`.
    pub fn event(ev: TrackEvent, pb: TracePacket) -> Packet {
        Packet {
            pb,
            event: Some(ev),
        }
    }

    /// Appends the packet as one `Trace.packet` field.
    pub fn put(&self, out: &mut Vec<u8>) {
        let Some(ev) = &self.event else {
            crate::wire::put_packet(out, &self.pb);
            return;
        };
        let ev_len = ev.encoded_len();
        out.push(crate::wire::PACKET_KEY);
        // The packet's own fields are written first, then their length is put before them:
        // moving those few bytes costs less than prost's pass to measure them.
        let start = out.len();
        put_header(&self.pb, out);
        encode_varint(key(PACKET_TRACK_EVENT, LEN), out);
        encode_varint(ev_len as u64, out);
        let end = out.len();
        let (prefix, n) = varint_bytes((end - start + ev_len) as u64);
        out.resize(end + n, 0);
        out.copy_within(start..end, start + n);
        out[start..start + n].copy_from_slice(&prefix[..n]);
        let body = out.len();
        ev.encode(out);
        debug_assert_eq!(out.len() - body, ev_len, "hand-computed event length");
    }
}

/// The fields of an event's packet, as prost writes them (by tag), the scalar ones by hand:
/// on the nsys benchmark, prost's two passes over every packet (length, then bytes) were a
/// tenth of the `.pftrace` writer's instructions. Message fields (interned data, defaults,
/// tracex's extension) are rare and go through prost. An event packet has no payload of its
/// own (`data`): its track event follows.
fn put_header(pb: &TracePacket, out: &mut Vec<u8>) {
    use crate::pb::trace_packet::OptionalTrustedPacketSequenceId as Seq;
    fn message(out: &mut Vec<u8>, field: u32, m: &impl Message) {
        encode_varint(key(field, LEN), out);
        m.encode_length_delimited(out)
            .expect("a Vec grows as needed");
    }
    debug_assert!(pb.data.is_none(), "an event packet with a payload");
    if let Some(t) = pb.timestamp {
        put_varint(out, 8, t);
    }
    if let Some(Seq::TrustedPacketSequenceId(id)) = pb.optional_trusted_packet_sequence_id {
        put_varint(out, 10, u64::from(id));
    }
    if let Some(d) = &pb.interned_data {
        message(out, 12, d.as_ref());
    }
    if let Some(f) = pb.sequence_flags {
        put_varint(out, 13, u64::from(f));
    }
    if let Some(c) = pb.incremental_state_cleared {
        put_varint(out, 41, u64::from(c));
    }
    if let Some(d) = pb.previous_packet_dropped {
        put_varint(out, 42, u64::from(d));
    }
    if let Some(c) = pb.timestamp_clock_id {
        put_varint(out, 58, u64::from(c));
    }
    if let Some(d) = &pb.trace_packet_defaults {
        message(out, 59, d.as_ref());
    }
    if let Some(x) = &pb.tracex {
        message(out, 7351, x.as_ref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::debug_annotation::{NameField, Value as DaValue};
    use crate::pb::track_event::{NameField as TeName, Type};
    use crate::pb::DebugAnnotation;

    /// The hand encoder's bytes decode, through prost, to what was encoded.
    #[test]
    fn hand_encoded_events_decode_as_prost_reads_them() {
        let mut a = Annotations::default();
        let scalars = [
            Scalar::Bool(true),
            Scalar::Int(-5),
            Scalar::UInt(u64::MAX),
            Scalar::Double(1.5),
            Scalar::Str("grid"),
            Scalar::StrIid(300),
            Scalar::Json("null"),
        ];
        for (i, v) in scalars.iter().enumerate() {
            a.scalar(i as u64 + 1, *v);
        }
        let mut nested = DebugAnnotation {
            array_values: vec![prost_scalar(0, &Scalar::Int(1))],
            ..Default::default()
        };
        a.encoded(9, &nested.encode_to_vec());
        nested.name_field = Some(NameField::NameIid(9));
        let ev = TrackEvent {
            r#type: Some(Type::SliceBegin as i32),
            track_uuid: Some(1 << 40),
            name_iid: Some(7),
            category_iid: Some(200),
            callstack_iid: Some(3),
            counter: Some(CounterValueField::CounterValue(-1)),
            extra_counter: Some((12, 1_000_000)),
            flow_ids: vec![1, u64::MAX],
            terminating_flow_ids: vec![5],
            annotations: a.buf,
            legacy_event: Some(Box::new(LegacyEvent {
                phase: Some(b's' as i32),
                ..Default::default()
            })),
        };
        let p = Packet::event(
            ev,
            TracePacket {
                sequence_flags: Some(2),
                timestamp: Some(1234),
                ..Default::default()
            },
        );
        let mut out = Vec::new();
        p.put(&mut out);
        assert_eq!(out[0], crate::wire::PACKET_KEY);
        let mut body = &out[1..];
        let back = TracePacket::decode_length_delimited(&mut body).unwrap();
        assert!(body.is_empty());
        assert_eq!(back.timestamp, Some(1234));
        assert_eq!(back.sequence_flags, Some(2));
        let Some(crate::pb::trace_packet::Data::TrackEvent(te)) = back.data else {
            panic!("no track event");
        };
        assert_eq!(te.r#type, Some(Type::SliceBegin as i32));
        assert_eq!(te.track_uuid, Some(1 << 40));
        assert_eq!(te.name_field, Some(TeName::NameIid(7)));
        assert_eq!(te.category_iids, vec![200]);
        assert_eq!(
            te.callstack_field,
            Some(crate::pb::track_event::CallstackField::CallstackIid(3))
        );
        assert_eq!(
            te.counter_value_field,
            Some(CounterValueField::CounterValue(-1))
        );
        assert_eq!(te.extra_counter_track_uuids, vec![12]);
        assert_eq!(te.extra_counter_values, vec![1_000_000]);
        assert_eq!(te.flow_ids, vec![1, u64::MAX]);
        assert_eq!(te.terminating_flow_ids, vec![5]);
        assert_eq!(te.legacy_event.unwrap().phase, Some(b's' as i32));
        let expected: Vec<DebugAnnotation> = scalars
            .iter()
            .enumerate()
            .map(|(i, v)| prost_scalar(i as u64 + 1, v))
            .chain([nested])
            .collect();
        assert_eq!(te.debug_annotations, expected);

        let double = TrackEvent {
            counter: Some(CounterValueField::DoubleCounterValue(-0.25)),
            ..Default::default()
        };
        let mut out = Vec::new();
        Packet::event(double, TracePacket::default()).put(&mut out);
        let back = TracePacket::decode_length_delimited(&out[1..]).unwrap();
        let Some(crate::pb::trace_packet::Data::TrackEvent(te)) = back.data else {
            panic!("no track event");
        };
        assert_eq!(
            te.counter_value_field,
            Some(CounterValueField::DoubleCounterValue(-0.25))
        );
    }

    /// Every field of an event's packet, written by hand, decodes through prost as prost
    /// would have written it, in prost's own byte order (which a packet of prost's with the
    /// same fields and no payload shows), the length in front counting them all.
    #[test]
    fn hand_encoded_packet_fields_are_prosts() {
        use crate::pb::trace_packet::OptionalTrustedPacketSequenceId as Seq;
        let pb = TracePacket {
            timestamp: Some(300),
            timestamp_clock_id: Some(64),
            interned_data: Some(Box::new(crate::pb::InternedData {
                event_names: vec![crate::pb::EventName {
                    iid: Some(1),
                    name: Some("k".into()),
                }],
                ..Default::default()
            })),
            sequence_flags: Some(2),
            incremental_state_cleared: Some(true),
            trace_packet_defaults: Some(Box::new(crate::pb::TracePacketDefaults {
                timestamp_clock_id: Some(64),
                ..Default::default()
            })),
            previous_packet_dropped: Some(1),
            tracex: Some(Box::new(crate::pb::tracex::Extra {
                color: Some("good".into()),
                ..Default::default()
            })),
            data: None,
            optional_trusted_packet_sequence_id: Some(Seq::TrustedPacketSequenceId(1)),
        };
        let mut header = Vec::new();
        put_header(&pb, &mut header);
        assert_eq!(header, pb.encode_to_vec());

        let ev = TrackEvent {
            name_iid: Some(1),
            ..Default::default()
        };
        let mut out = Vec::new();
        Packet::event(ev, pb.clone()).put(&mut out);
        let back = TracePacket::decode_length_delimited(&out[1..]).unwrap();
        let Some(crate::pb::trace_packet::Data::TrackEvent(te)) = &back.data else {
            panic!("no track event");
        };
        assert_eq!(te.name_field, Some(TeName::NameIid(1)));
        assert_eq!(TracePacket { data: None, ..back }, pb);
    }

    /// What prost would have built for a scalar annotation.
    fn prost_scalar(name: u64, v: &Scalar<'_>) -> DebugAnnotation {
        DebugAnnotation {
            name_field: Some(NameField::NameIid(name)),
            value: Some(match *v {
                Scalar::Bool(b) => DaValue::BoolValue(b),
                Scalar::Int(i) => DaValue::IntValue(i),
                Scalar::UInt(u) => DaValue::UintValue(u),
                Scalar::Double(f) => DaValue::DoubleValue(f),
                Scalar::Str(s) => DaValue::StringValue(s.to_owned()),
                Scalar::StrIid(i) => DaValue::StringValueIid(i),
                Scalar::Json(s) => DaValue::LegacyJsonValue(s.to_owned()),
            }),
            ..Default::default()
        }
    }
}
