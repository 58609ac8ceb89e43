//! The outer framing of a Perfetto trace: a `Trace` message is a sequence of `packet` fields
//! (field 1, length-delimited), so a trace is read and written one packet at a time without ever
//! holding the whole `Trace`. The packets themselves are encoded and decoded by prost.

use std::io::{self, BufRead, Read};

use prost::Message;

use crate::pb::TracePacket;

/// Key of `Trace.packet`: field 1, wire type LEN.
pub const PACKET_KEY: u8 = 0x0a;

/// A packet larger than this is taken for corruption (Perfetto's own limit is far lower).
pub const MAX_PACKET: u64 = 256 << 20;

/// Appends `packet` as one `Trace.packet` field.
pub fn put_packet(out: &mut Vec<u8>, packet: &TracePacket) {
    out.push(PACKET_KEY);
    packet
        .encode_length_delimited(out)
        .expect("a Vec grows as needed");
}

/// What [`PacketReader::next`] found.
#[derive(Debug)]
pub enum Next {
    /// A complete packet (its bytes) starting at this byte offset of the (decompressed) input.
    Packet(u64, Vec<u8>),
    /// A field of `Trace` other than `packet` (skipped): its field number and offset.
    Other(u32, u64),
    /// The input ended inside a packet (a trace cut short): the offset of that packet.
    Torn(u64),
    End,
}

/// Reads `Trace.packet` fields from a byte stream.
pub struct PacketReader<R> {
    r: R,
    offset: u64,
}

/// A structural error in the framing (not in a packet's content).
#[derive(Debug)]
pub struct FramingError {
    pub offset: u64,
    pub what: String,
}

impl<R: BufRead> PacketReader<R> {
    pub fn new(r: R) -> Self {
        PacketReader { r, offset: 0 }
    }

    /// Byte offset of the next field.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads a varint with prost from the buffered bytes; `None` at a clean end of input.
    fn varint(&mut self) -> io::Result<Option<Result<u64, ()>>> {
        let mut bytes = Vec::with_capacity(10);
        loop {
            let buf = self.r.fill_buf()?;
            if buf.is_empty() {
                return Ok(if bytes.is_empty() {
                    None
                } else {
                    Some(Err(()))
                });
            }
            let b = buf[0];
            self.r.consume(1);
            self.offset += 1;
            bytes.push(b);
            if b & 0x80 == 0 || bytes.len() == 10 {
                break;
            }
        }
        Ok(Some(
            prost::encoding::decode_varint(&mut bytes.as_slice()).map_err(|_| ()),
        ))
    }

    /// Reads exactly `n` bytes, or fewer at the end of input.
    fn take(&mut self, n: u64) -> io::Result<Vec<u8>> {
        let mut v = Vec::with_capacity(n.min(1 << 20) as usize);
        (&mut self.r).take(n).read_to_end(&mut v)?;
        self.offset += v.len() as u64;
        Ok(v)
    }

    pub fn next(&mut self) -> io::Result<Result<Next, FramingError>> {
        let start = self.offset;
        let key = match self.varint()? {
            None => return Ok(Ok(Next::End)),
            Some(Ok(k)) => k,
            Some(Err(())) => return Ok(Ok(Next::Torn(start))),
        };
        let (field, wire) = ((key >> 3) as u32, (key & 7) as u8);
        let bad = |what: String| {
            Ok(Err(FramingError {
                offset: start,
                what,
            }))
        };
        match wire {
            // LEN: a packet, or another field to skip
            2 => {
                let len = match self.varint()? {
                    Some(Ok(l)) => l,
                    _ => return Ok(Ok(Next::Torn(start))),
                };
                if len > MAX_PACKET {
                    return bad(format!(
                        "field {field} claims {len} bytes (more than {MAX_PACKET}): not a Perfetto trace, or a corrupt one"
                    ));
                }
                let body = self.take(len)?;
                if (body.len() as u64) < len {
                    return Ok(Ok(Next::Torn(start)));
                }
                if field == 1 {
                    Ok(Ok(Next::Packet(start, body)))
                } else {
                    Ok(Ok(Next::Other(field, start)))
                }
            }
            0 => match self.varint()? {
                Some(Ok(_)) => Ok(Ok(Next::Other(field, start))),
                _ => Ok(Ok(Next::Torn(start))),
            },
            1 | 5 => {
                let n = if wire == 1 { 8 } else { 4 };
                if (self.take(n)?.len() as u64) < n {
                    return Ok(Ok(Next::Torn(start)));
                }
                Ok(Ok(Next::Other(field, start)))
            }
            _ => bad(format!(
                "a Trace field with wire type {wire} (field {field}): not a Perfetto trace, or a corrupt one"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::trace_packet::OptionalTrustedPacketSequenceId;

    fn packet(ts: u64) -> TracePacket {
        TracePacket {
            timestamp: Some(ts),
            optional_trusted_packet_sequence_id: Some(
                OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(1),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn round_trip_and_torn_end() {
        let mut out = Vec::new();
        put_packet(&mut out, &packet(5));
        put_packet(&mut out, &packet(300));
        let whole = out.len();
        out.extend_from_slice(&[0x10, 0x96, 0x01]); // field 2 varint: skipped
        put_packet(&mut out, &packet(7));
        out.truncate(out.len() - 1);
        let mut r = PacketReader::new(&out[..]);
        let mut ts = Vec::new();
        loop {
            match r.next().unwrap().unwrap() {
                Next::Packet(_, b) => ts.push(TracePacket::decode(&b[..]).unwrap().timestamp),
                Next::Other(f, at) => assert_eq!((f, at), (2, whole as u64)),
                Next::Torn(at) => {
                    assert_eq!(at, whole as u64 + 3);
                    break;
                }
                Next::End => panic!("the last packet is torn"),
            }
        }
        assert_eq!(ts, vec![Some(5), Some(300)]);
    }

    #[test]
    fn absurd_lengths_are_errors() {
        let bytes = [0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f];
        let e = PacketReader::new(&bytes[..]).next().unwrap().unwrap_err();
        assert_eq!(e.offset, 0);
        assert!(e.what.contains("claims"), "{}", e.what);
        let e = PacketReader::new(&[0x0f, 0x00][..])
            .next()
            .unwrap()
            .unwrap_err();
        assert!(e.what.contains("wire type 7"), "{}", e.what);
    }
}
