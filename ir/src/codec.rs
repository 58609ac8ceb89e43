//! A compact binary encoding of events, used to spill sorted runs to temporary files.
//! Integers are LEB128 varints (signed ones zig-zagged); the format is private to one process.
//! Event times are written as their distance to a base the writer chooses (the sorter: the first
//! time it sees) and read with the same base: epoch-nanosecond times take nine bytes and a slow
//! path to read (a tenth of the thread that decodes a merge), their distance five or six.

use crate::diag::Location;
use crate::error::{Error, Result};
use crate::event::{
    CounterValue, Event, FlowBind, FlowId, FlowPoint, FlowRole, Instant, Num, Sample, Slice,
};
use crate::model::{push_arg, Args, CounterId, StackId, TrackId, Value};
use crate::strings::StrId;

pub fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    put_u64(out, ((v << 1) ^ (v >> 63)) as u64);
}

pub fn put_opt_u32(out: &mut Vec<u8>, v: Option<u32>) {
    match v {
        None => out.push(0),
        Some(x) => put_u64(out, x as u64 + 1),
    }
}

pub fn put_opt_i64(out: &mut Vec<u8>, v: Option<i64>) {
    match v {
        None => out.push(0),
        Some(x) => {
            out.push(1);
            put_i64(out, x);
        }
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u64(out, b.len() as u64);
    out.extend_from_slice(b);
}

pub fn put_args(out: &mut Vec<u8>, args: &Args) {
    put_u64(out, args.len() as u64);
    for a in args {
        put_u64(out, a.key.0 as u64);
        match &a.value {
            Value::Null => out.push(0),
            Value::Bool(b) => out.push(if *b { 2 } else { 1 }),
            Value::Int(i) => {
                out.push(3);
                put_i64(out, *i);
            }
            Value::UInt(u) => {
                out.push(4);
                put_u64(out, *u);
            }
            Value::Float(f) => {
                out.push(5);
                out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            Value::Str(s) => {
                out.push(6);
                put_bytes(out, s.as_bytes());
            }
            Value::Json(s) => {
                out.push(7);
                put_bytes(out, s.as_bytes());
            }
            Value::Sym(s) => {
                out.push(8);
                put_u64(out, s.0 as u64);
            }
            Value::JsonSym(s) => {
                out.push(9);
                put_u64(out, s.0 as u64);
            }
        }
    }
}

/// Appends the encoding of `s` to `out`, as [`encode`] would of it as an event: a record that
/// keeps a slice encodes it without a copy, and [`Decoder::slice`] reads it back.
pub fn encode_slice(s: &Slice, base: i64, out: &mut Vec<u8>) {
    out.push(0);
    put_u64(out, s.track.0 as u64);
    put_i64(out, s.ts.wrapping_sub(base));
    put_opt_i64(out, s.dur);
    put_u64(out, s.name.0 as u64);
    put_opt_u32(out, s.cat.map(|c| c.0));
    put_opt_u32(out, s.stack.map(|c| c.0));
    put_opt_u32(out, s.color.map(|c| c.0));
    put_opt_i64(out, s.thread_ts);
    put_opt_i64(out, s.thread_dur);
    put_args(out, &s.args);
}

/// Appends the encoding of `ev` to `out`.
pub fn encode(ev: &Event, base: i64, out: &mut Vec<u8>) {
    let time = |out: &mut Vec<u8>, ts: i64| put_i64(out, ts.wrapping_sub(base));
    match ev {
        Event::Slice(s) => encode_slice(s, base, out),
        Event::Instant(i) => {
            out.push(1);
            put_u64(out, i.track.0 as u64);
            time(out, i.ts);
            put_u64(out, i.name.0 as u64);
            put_opt_u32(out, i.cat.map(|c| c.0));
            put_opt_u32(out, i.stack.map(|c| c.0));
            put_opt_u32(out, i.color.map(|c| c.0));
            put_args(out, &i.args);
        }
        Event::Counter(c) => {
            out.push(2);
            put_u64(out, c.counter.0 as u64);
            time(out, c.ts);
            match c.value {
                Num::Int(i) => {
                    out.push(0);
                    put_i64(out, i);
                }
                Num::Float(f) => {
                    out.push(1);
                    out.extend_from_slice(&f.to_bits().to_le_bytes());
                }
            }
        }
        Event::Flow(f) => {
            out.push(3);
            put_u64(out, f.id.0);
            out.push(match f.role {
                FlowRole::Start => 0,
                FlowRole::Step => 1,
                FlowRole::End => 2,
            });
            put_u64(out, f.track.0 as u64);
            time(out, f.ts);
            out.push(match f.bind {
                FlowBind::Enclosing => 0,
                FlowBind::Next => 1,
            });
            put_opt_u32(out, f.name.map(|c| c.0));
            put_opt_u32(out, f.cat.map(|c| c.0));
        }
        Event::Sample(s) => {
            out.push(4);
            put_u64(out, s.track.0 as u64);
            put_opt_i64(out, s.ts.map(|t| t.wrapping_sub(base)));
            put_opt_u32(out, s.stack.map(|c| c.0));
            put_i64(out, s.weight);
            put_opt_u32(out, s.cpu);
            put_opt_u32(out, s.name.map(|c| c.0));
        }
    }
}

/// Reads values back from an encoded buffer.
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    /// The base the event times were written against ([`encode`]).
    base: i64,
}

fn corrupt() -> Error {
    Error::invalid(Location::Nowhere, "internal: corrupt spill record")
}

impl<'a> Decoder<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Decoder::with_base(buf, 0)
    }

    /// A decoder of events written against the time base `base`.
    pub fn with_base(buf: &'a [u8], base: i64) -> Self {
        Decoder { buf, pos: 0, base }
    }

    /// An event time.
    fn time(&mut self) -> Result<i64> {
        Ok(self.i64()?.wrapping_add(self.base))
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn byte(&mut self) -> Result<u8> {
        let b = *self.buf.get(self.pos).ok_or_else(corrupt)?;
        self.pos += 1;
        Ok(b)
    }

    /// A LEB128 value; most are ids and flags of one byte, read without the loop.
    #[inline]
    pub fn u64(&mut self) -> Result<u64> {
        match self.buf.get(self.pos) {
            Some(&b) if b < 0x80 => {
                self.pos += 1;
                Ok(b as u64)
            }
            _ => self.long_u64(),
        }
    }

    fn long_u64(&mut self) -> Result<u64> {
        // Times are epoch nanoseconds: nine bytes, a byte at a time the merge thread's largest
        // decoding cost. Eight of them are read as one word and their 7-bit groups gathered
        // at once; a value that ends within them is done.
        let mut v = 0u64;
        let mut shift = 0;
        if let Some(word) = self.buf.get(self.pos..self.pos + 8) {
            let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            let ends = !word & 0x8080_8080_8080_8080;
            let len = match ends {
                0 => 8,
                e => e.trailing_zeros() as usize / 8 + 1,
            };
            let kept = match len {
                8 => word,
                n => word & ((1u64 << (8 * n)) - 1),
            };
            for i in 0..8 {
                v |= ((kept >> (8 * i)) & 0x7f) << (7 * i);
            }
            self.pos += len;
            if ends != 0 {
                return Ok(v);
            }
            shift = 56;
        }
        loop {
            let b = self.byte()?;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(corrupt());
            }
        }
    }

    pub fn i64(&mut self) -> Result<i64> {
        let u = self.u64()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    fn u32(&mut self) -> Result<u32> {
        u32::try_from(self.u64()?).map_err(|_| corrupt())
    }

    pub fn opt_u32(&mut self) -> Result<Option<u32>> {
        Ok(match self.u64()? {
            0 => None,
            v => Some(u32::try_from(v - 1).map_err(|_| corrupt())?),
        })
    }

    fn opt_time(&mut self) -> Result<Option<i64>> {
        Ok(self.opt_i64()?.map(|t| t.wrapping_add(self.base)))
    }

    pub fn opt_i64(&mut self) -> Result<Option<i64>> {
        Ok(match self.byte()? {
            0 => None,
            _ => Some(self.i64()?),
        })
    }

    fn f64(&mut self) -> Result<f64> {
        let b = self.buf.get(self.pos..self.pos + 8).ok_or_else(corrupt)?;
        self.pos += 8;
        Ok(f64::from_bits(u64::from_le_bytes(
            b.try_into().expect("8 bytes"),
        )))
    }

    fn text(&mut self) -> Result<Box<str>> {
        let n = self.u64()? as usize;
        let b = self.buf.get(self.pos..self.pos + n).ok_or_else(corrupt)?;
        self.pos += n;
        Ok(Box::from(std::str::from_utf8(b).map_err(|_| corrupt())?))
    }

    pub fn args(&mut self) -> Result<Args> {
        let n = self.u64()? as usize;
        let mut args = Args::with_capacity(n);
        for _ in 0..n {
            let key = StrId(self.u32()?);
            // each kind's scalar is read before its value is made in the list (push_arg)
            macro_rules! put {
                ($kind:ident, $read:expr) => {{
                    let v = $read;
                    push_arg(&mut args, key, || Value::$kind(v))
                }};
            }
            match self.byte()? {
                0 => push_arg(&mut args, key, || Value::Null),
                1 => put!(Bool, false),
                2 => put!(Bool, true),
                3 => put!(Int, self.i64()?),
                4 => put!(UInt, self.u64()?),
                5 => put!(Float, self.f64()?),
                6 => put!(Str, self.text()?),
                7 => put!(Json, self.text()?),
                8 => put!(Sym, StrId(self.u32()?)),
                9 => put!(JsonSym, StrId(self.u32()?)),
                _ => return Err(corrupt()),
            }
        }
        Ok(args)
    }

    /// Where the next value starts.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The fields of an encoded event that place it in time, without decoding the rest: its
    /// kind (0 slice, 1 instant, 2 counter, 3 flow point, 4 sample, as [`encode`] tags them),
    /// its time (`None`: a sample without one) and a slice's duration (`None`: open).
    pub fn time_fields(&mut self) -> Result<(u8, Option<i64>, Option<i64>)> {
        let tag = self.byte()?;
        Ok(match tag {
            0 => {
                self.u64()?; // track
                let ts = self.time()?;
                (tag, Some(ts), self.opt_i64()?)
            }
            1 | 2 => {
                self.u64()?; // track, counter
                (tag, Some(self.time()?), None)
            }
            3 => {
                self.u64()?; // id
                self.byte()?; // role
                self.u64()?; // track
                (tag, Some(self.time()?), None)
            }
            4 => {
                self.u64()?; // track
                (tag, self.opt_time()?, None)
            }
            _ => return Err(corrupt()),
        })
    }

    /// Decodes one slice, written by [`encode_slice`] (or [`encode`] of a slice event); any other
    /// event is an error.
    pub fn slice(&mut self) -> Result<Slice> {
        match self.byte()? {
            0 => self.slice_fields(),
            _ => Err(corrupt()),
        }
    }

    fn slice_fields(&mut self) -> Result<Slice> {
        Ok(Slice {
            track: TrackId(self.u32()?),
            ts: self.time()?,
            dur: self.opt_i64()?,
            name: StrId(self.u32()?),
            cat: self.opt_u32()?.map(StrId),
            stack: self.opt_u32()?.map(StackId),
            color: self.opt_u32()?.map(StrId),
            thread_ts: self.opt_i64()?,
            thread_dur: self.opt_i64()?,
            args: self.args()?,
        })
    }

    /// Decodes one event.
    pub fn event(&mut self) -> Result<Event> {
        Ok(match self.byte()? {
            0 => Event::Slice(self.slice_fields()?),
            1 => Event::Instant(Instant {
                track: TrackId(self.u32()?),
                ts: self.time()?,
                name: StrId(self.u32()?),
                cat: self.opt_u32()?.map(StrId),
                stack: self.opt_u32()?.map(StackId),
                color: self.opt_u32()?.map(StrId),
                args: self.args()?,
            }),
            2 => Event::Counter(CounterValue {
                counter: CounterId(self.u32()?),
                ts: self.time()?,
                value: match self.byte()? {
                    0 => Num::Int(self.i64()?),
                    _ => Num::Float(self.f64()?),
                },
            }),
            3 => Event::Flow(FlowPoint {
                id: FlowId(self.u64()?),
                role: match self.byte()? {
                    0 => FlowRole::Start,
                    1 => FlowRole::Step,
                    _ => FlowRole::End,
                },
                track: TrackId(self.u32()?),
                ts: self.time()?,
                bind: match self.byte()? {
                    0 => FlowBind::Enclosing,
                    _ => FlowBind::Next,
                },
                name: self.opt_u32()?.map(StrId),
                cat: self.opt_u32()?.map(StrId),
            }),
            4 => Event::Sample(Sample {
                track: TrackId(self.u32()?),
                ts: self.opt_time()?,
                stack: self.opt_u32()?.map(StackId),
                weight: self.i64()?,
                cpu: self.opt_u32()?,
                name: self.opt_u32()?.map(StrId),
            }),
            _ => return Err(corrupt()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Arg;

    #[test]
    fn varints_round_trip_at_every_length_and_offset() {
        let mut values = vec![
            0u64,
            1,
            127,
            128,
            255,
            16_383,
            16_384,
            u64::MAX,
            u64::MAX - 1,
        ];
        for shift in 0..64 {
            values.extend([1u64 << shift, (1u64 << shift) - 1, (1u64 << shift) | 1]);
        }
        values.push(3_523_400_000_000_000_123);
        for pad in 0..3 {
            let mut buf = vec![0x55u8; pad];
            for &v in &values {
                put_u64(&mut buf, v);
            }
            // nothing after the last value: the word read must not pass the end
            let mut d = Decoder::new(&buf);
            d.pos = pad;
            for &v in &values {
                assert_eq!(d.u64().unwrap(), v, "pad {pad}");
            }
            assert!(d.at_end());
        }
        // more than ten bytes, and a value cut short, are errors
        assert!(Decoder::new(&[0xff; 11]).u64().is_err());
        assert!(Decoder::new(&[0xff; 9]).u64().is_err());
        assert!(Decoder::new(&[0x80, 0x80]).u64().is_err());
    }

    #[test]
    fn round_trips_every_variant() {
        let mut s = Slice::new(TrackId(3), -5, 10, StrId(7));
        s.dur = None;
        s.cat = Some(StrId(2));
        s.thread_ts = Some(i64::MIN);
        s.args = vec![
            Arg {
                key: StrId(1),
                value: Value::Null,
            },
            Arg {
                key: StrId(2),
                value: Value::Bool(true),
            },
            Arg {
                key: StrId(3),
                value: Value::Int(-9),
            },
            Arg {
                key: StrId(4),
                value: Value::UInt(u64::MAX),
            },
            Arg {
                key: StrId(5),
                value: Value::Float(0.1),
            },
            Arg {
                key: StrId(6),
                value: Value::str("héllo"),
            },
            Arg {
                key: StrId(7),
                value: Value::Json("[1,2]".into()),
            },
            Arg {
                key: StrId(8),
                value: Value::Sym(StrId(70_000)),
            },
            Arg {
                key: StrId(9),
                value: Value::JsonSym(StrId(3)),
            },
        ];
        let events = vec![
            Event::Slice(s),
            Event::Instant(Instant {
                track: TrackId(1),
                ts: 4,
                name: StrId(0),
                cat: None,
                args: vec![],
                stack: Some(StackId(9)),
                color: None,
            }),
            Event::Counter(CounterValue {
                counter: CounterId(2),
                ts: 8,
                value: Num::Float(2.5),
            }),
            Event::Counter(CounterValue {
                counter: CounterId(2),
                ts: 9,
                value: Num::Int(i64::MAX),
            }),
            Event::Flow(FlowPoint {
                id: FlowId(u64::MAX),
                role: FlowRole::Step,
                track: TrackId(0),
                ts: 1,
                bind: FlowBind::Next,
                name: Some(StrId(1)),
                cat: None,
            }),
            Event::Sample(Sample {
                track: TrackId(0),
                ts: None,
                stack: None,
                weight: 3,
                cpu: Some(0),
                name: None,
            }),
        ];
        // times far on either side of the base, and bases at the ends of the range
        for base in [0, 1_712_195_495_519_689_047, i64::MIN, i64::MAX, -7] {
            let mut buf = Vec::new();
            for e in &events {
                encode(e, base, &mut buf);
            }
            let mut d = Decoder::with_base(&buf, base);
            for e in &events {
                assert_eq!(&d.event().unwrap(), e, "base {base}");
            }
            assert!(d.at_end());
            assert!(Decoder::with_base(&buf[..3], base).event().is_err());
        }
        // an epoch time near its base takes 5 bytes where it took 9
        let slice = Event::Slice(Slice::new(
            TrackId(0),
            1_712_195_495_519_689_047,
            1,
            StrId(0),
        ));
        let (mut near, mut far) = (Vec::new(), Vec::new());
        encode(&slice, 1_712_195_495_000_000_000, &mut near);
        encode(&slice, 0, &mut far);
        assert_eq!(far.len() - near.len(), 4);
    }

    #[test]
    fn a_slice_encodes_as_its_event_and_reads_back_alone() {
        let mut s = Slice::new(TrackId(3), 1_000, 10, StrId(7));
        s.color = Some(StrId(4));
        s.thread_dur = Some(3);
        s.args = vec![Arg {
            key: StrId(1),
            value: Value::str("x"),
        }];
        let event = Event::Slice(s.clone());
        let (mut alone, mut as_event) = (Vec::new(), Vec::new());
        encode_slice(&s, 900, &mut alone);
        encode(&event, 900, &mut as_event);
        assert_eq!(alone, as_event);
        let mut d = Decoder::with_base(&alone, 900);
        assert_eq!(d.slice().unwrap(), s);
        assert!(d.at_end());
        assert_eq!(Decoder::with_base(&alone, 900).event().unwrap(), event);
        // another event where a slice is expected, or a slice cut short, is an error
        let mut counter = Vec::new();
        let value = Num::Int(1);
        encode(
            &Event::Counter(CounterValue {
                counter: CounterId(0),
                ts: 0,
                value,
            }),
            0,
            &mut counter,
        );
        assert!(Decoder::new(&counter).slice().is_err());
        assert!(Decoder::with_base(&alone[..alone.len() - 1], 900)
            .slice()
            .is_err());
    }
}
