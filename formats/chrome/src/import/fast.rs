//! The fast path of [`super::raw::parse_event`], for the common event: keys and text fields
//! without escapes, nested values only in `args`. It validates the event as UTF-8 once and reads
//! every field in one pass, where serde validates each string on its own and walks `args` twice
//! (once to skip it, once to check it as a raw value). Anything else gives `None` and the caller
//! parses the event with serde, so the two agree on every input: the same fields, and where the
//! input is not valid JSON, serde's error.
//!
//! The pass yields a [`Layout`]: where each field lies in the event's text. It holds no borrow,
//! so the read-ahead thread can parse an event and the importer's thread build the
//! [`RawEvent`] from the same bytes.

use std::borrow::Cow;

use super::raw::{Member, Members, Raw, RawEvent, Text, Times};
use crate::number::micros_to_ns;

/// The deepest nesting this path checks; deeper values go to serde (its own limit is 128).
const MAX_DEPTH: usize = 64;

/// A field of [`RawEvent`] the fast path fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Ph,
    Name,
    Cat,
    Scope,
    S,
    Bp,
    Cname,
    Args,
    Ts,
    Dur,
    Tts,
    Tdur,
    Pid,
    Tid,
    Id,
    Id2,
    BindId,
    FlowIn,
    FlowOut,
    Sf,
    Stack,
    Esf,
    Estack,
}

/// How a field's value is read: a string (its contents) or a raw value (its text), and whether
/// a raw value may be an object or array.
enum Shape {
    Text,
    Raw { nested: bool },
}

fn field(key: &[u8]) -> Option<(Field, Shape)> {
    use Field::*;
    let raw = Shape::Raw { nested: false };
    Some(match key {
        b"ph" => (Ph, Shape::Text),
        b"name" => (Name, Shape::Text),
        b"cat" => (Cat, Shape::Text),
        b"scope" => (Scope, Shape::Text),
        b"s" => (S, Shape::Text),
        b"bp" => (Bp, Shape::Text),
        b"cname" => (Cname, Shape::Text),
        b"args" => (Args, Shape::Raw { nested: true }),
        b"ts" => (Ts, raw),
        b"dur" => (Dur, raw),
        b"tts" => (Tts, raw),
        b"tdur" => (Tdur, raw),
        b"pid" => (Pid, raw),
        b"tid" => (Tid, raw),
        b"id" => (Id, raw),
        b"id2" => (Id2, raw),
        b"bind_id" => (BindId, raw),
        b"flow_in" => (FlowIn, raw),
        b"flow_out" => (FlowOut, raw),
        b"sf" => (Sf, raw),
        b"stack" => (Stack, raw),
        b"esf" => (Esf, raw),
        b"estack" => (Estack, raw),
        _ => return None,
    })
}

/// One known field, in input order: its value's bytes within the event, `None` for `null`.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub field: Field,
    pub at: Option<(u32, u32)>,
}

/// The lists [`layout`] appends to: the spans of known fields, and the members of `args`
/// objects.
#[derive(Debug, Default)]
pub struct Spans {
    pub fields: Vec<Span>,
    pub members: Vec<Member>,
}

impl Spans {
    pub fn clear(&mut self) {
        self.fields.clear();
        self.members.clear();
    }

    /// Drops what `layout`, the last read into these lists, added to them.
    pub fn forget(&mut self, layout: &Layout) {
        self.fields.truncate(layout.spans.start);
        if let Some(m) = &layout.members {
            self.members.truncate(m.start);
        }
    }

    /// Runs `read`, which appends to these lists; where it gives `None`, what it appended is
    /// dropped.
    fn read<T>(&mut self, read: impl FnOnce(&mut Spans) -> Option<T>) -> Option<T> {
        let (fields, members) = (self.fields.len(), self.members.len());
        let r = read(self);
        if r.is_none() {
            self.fields.truncate(fields);
            self.members.truncate(members);
        }
        r
    }
}

/// An event read by the fast path: its known fields are `spans` of the lists it was read into
/// (see [`layout`]), and the members of its `args`, where their keys have no escapes,
/// `members` of them. The members and the `times` are read here, on the read-ahead thread, so
/// that the importer's thread, the busier one, need not read them again.
#[derive(Debug, Default)]
pub struct Layout {
    pub spans: std::ops::Range<usize>,
    pub members: Option<std::ops::Range<usize>>,
    pub times: Times,
    pub fields: u32,
    pub unknown: u32,
    pub first_unknown: Option<String>,
}

impl Layout {
    /// The event, from the text the layout was read from and the list its spans went to;
    /// `None` if they do not lie on `text` (not the text that was read).
    pub fn event<'a>(&self, text: &'a str, spans: &'a Spans) -> Option<RawEvent<'a>> {
        let mut e = RawEvent::default();
        self.event_into(text, spans, &mut e)?;
        Some(e)
    }

    /// [`Self::event`], written over `e`: for a caller that reads one event after another, as
    /// an event returned by value (half a kilobyte) was copied twice on the importing thread.
    pub fn event_into<'a>(
        &self,
        text: &'a str,
        spans: &'a Spans,
        e: &mut RawEvent<'a>,
    ) -> Option<()> {
        let members = match &self.members {
            Some(m) => Some(spans.members.get(m.clone())?),
            None => None,
        };
        self.write(text, &spans.fields, members, e)
    }

    fn write<'a>(
        &self,
        text: &'a str,
        fields: &[Span],
        members: Option<&'a [Member]>,
        e: &mut RawEvent<'a>,
    ) -> Option<()> {
        *e = RawEvent {
            fields: self.fields,
            unknown: self.unknown,
            first_unknown: self.first_unknown.clone(),
            members: Members(members),
            times: self.times,
            ..RawEvent::default()
        };
        for span in fields.get(self.spans.clone())? {
            let v = match span.at {
                Some((start, len)) => Some(text.get(start as usize..(start + len) as usize)?),
                None => None,
            };
            let text = || v.map(|s| Text(Cow::Borrowed(s)));
            let raw = || v.map(Raw::new);
            match span.field {
                Field::Ph => e.ph = text(),
                Field::Name => e.name = text(),
                Field::Cat => e.cat = text(),
                Field::Scope => e.scope = text(),
                Field::S => e.s = text(),
                Field::Bp => e.bp = text(),
                Field::Cname => e.cname = text(),
                Field::Args => e.args = raw(),
                Field::Ts => e.ts = raw(),
                Field::Dur => e.dur = raw(),
                Field::Tts => e.tts = raw(),
                Field::Tdur => e.tdur = raw(),
                Field::Pid => e.pid = raw(),
                Field::Tid => e.tid = raw(),
                Field::Id => e.id = raw(),
                Field::Id2 => e.id2 = raw(),
                Field::BindId => e.bind_id = raw(),
                Field::FlowIn => e.flow_in = raw(),
                Field::FlowOut => e.flow_out = raw(),
                Field::Sf => e.sf = raw(),
                Field::Stack => e.stack = raw(),
                Field::Esf => e.esf = raw(),
                Field::Estack => e.estack = raw(),
            }
        }
        Some(())
    }
}

/// The event in `bytes`, or `None` where serde must decide.
pub fn parse_event(bytes: &[u8]) -> Option<RawEvent<'_>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut spans = Spans::default();
    // the members lie in `spans`, which this function cannot lend out: `args` is read again
    let mut e = RawEvent::default();
    layout(text, &mut spans)?.write(text, &spans.fields, None, &mut e)?;
    Some(e)
}

/// Reads the event `text`, appending the spans of its known fields and the members of its
/// `args` to `spans`; `None` (and `spans` as they were) where serde must decide.
pub fn layout(text: &str, spans: &mut Spans) -> Option<Layout> {
    spans.read(|spans| {
        let (layout, end) = read_layout(text.as_bytes(), spans)?;
        only_whitespace(&text.as_bytes()[end..]).then_some(layout)
    })
}

/// Reads the event at the start of `bytes` (the rest of the tokenizer's buffer: what follows
/// the event is not read) as [`layout`] does, and its length; `None` (and `spans` as they were)
/// where serde must decide or the event does not end within `bytes`. Its strings are not
/// checked as UTF-8 (keys are compared as bytes): the caller checks the event's bytes before
/// it reads anything from them. This is how the tokenizer finds the end of most events: one
/// walk over them instead of its scan for the closing brace and then this one.
pub fn layout_prefix(bytes: &[u8], spans: &mut Spans) -> Option<(Layout, usize)> {
    // offsets are u32: an event longer than that does not end within what is read here
    let bytes = &bytes[..bytes.len().min(u32::MAX as usize)];
    spans.read(|spans| read_layout(bytes, spans))
}

fn only_whitespace(b: &[u8]) -> bool {
    b.iter().all(|c| matches!(c, b' ' | b'\n' | b'\r' | b'\t'))
}

/// The layout of the object at the start of `b` and where it ends.
fn read_layout(b: &[u8], spans: &mut Spans) -> Option<(Layout, usize)> {
    let mut e = Layout::default();
    let first = spans.fields.len();
    let end = object(b, |p, (key_start, key_end)| {
        let key = &b[key_start..key_end];
        e.fields += 1;
        let Some((field, shape)) = field(key) else {
            p.raw_field(false)?;
            e.unknown += 1;
            if e.first_unknown.is_none() {
                e.first_unknown = Some(std::str::from_utf8(key).ok()?.to_owned());
            }
            return Some(());
        };
        let at = match shape {
            Shape::Text => p.text_field()?,
            Shape::Raw { nested } if field == Field::Args => {
                let (at, members) = p.args_field(nested, &mut spans.members)?;
                e.members = members;
                at
            }
            Shape::Raw { nested } => p.raw_field(nested)?,
        };
        // the last `ts` or `dur` counts, as in the event
        let time = || {
            let (start, end) = at?;
            micros_to_ns(std::str::from_utf8(&b[start..end]).ok()?)
        };
        match field {
            Field::Ts => e.times.ts = time(),
            Field::Dur => e.times.dur = time(),
            _ => {}
        }
        // offsets fit: the caller checked that the event's length does
        let at = at.map(|(start, end)| (start as u32, (end - start) as u32));
        spans.fields.push(Span { field, at });
        Some(())
    })?;
    e.spans = first..spans.fields.len();
    Some((e, end))
}

/// The key/value pairs of the JSON object `text`, values as raw text, where no key has an
/// escape; `None` where serde must decide (escapes, deep nesting, or not an object).
pub fn object_pairs(text: &str) -> Option<Vec<(Text<'_>, Raw<'_>)>> {
    let mut pairs = Vec::new();
    // keys and values begin and end at ASCII bytes, so at char boundaries of `text`
    let end = object(text.as_bytes(), |p, (key_start, key_end)| {
        let start = p.i;
        p.value(0)?;
        pairs.push((
            Text(Cow::Borrowed(&text[key_start..key_end])),
            Raw::new(&text[start..p.i]),
        ));
        Some(())
    })?;
    only_whitespace(&text.as_bytes()[end..]).then_some(pairs)
}

/// Walks the JSON object at the start of `b` (after any whitespace) whose keys have no
/// escapes, handing where each key's contents lie to `member`, which reads the value after
/// it; where the object ends, or `None` where serde must decide.
fn object<'a>(
    b: &'a [u8],
    member: impl FnMut(&mut Parser<'a>, (usize, usize)) -> Option<()>,
) -> Option<usize> {
    let mut p = Parser { b, i: 0 };
    p.ws();
    p.object(member)?;
    Some(p.i)
}

/// Where a field's value lies in the event's text (start, end); `None` for `null`.
type At = Option<(usize, usize)>;

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.i += 1;
        }
    }

    /// Moves past the closing quote of a string whose opening quote is at `i`; whether it had
    /// escapes. `None`: a control character, or an escape serde may judge otherwise (`\u`).
    #[inline]
    fn skip_string(&mut self) -> Option<bool> {
        self.eat(b'"')?;
        let mut escaped = false;
        loop {
            self.skip_plain();
            match self.next()? {
                b'"' => return Some(escaped),
                b'\\' => {
                    escaped = true;
                    match self.next()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        _ => return None,
                    }
                }
                c if c < 0x20 => return None,
                _ => {}
            }
        }
    }

    /// Moves past the bytes of a string that end nothing and escape nothing, eight at a time, to
    /// the next quote, backslash or control character (or to the last few bytes): a byte at a
    /// time, strings were a quarter of laying an event out, on the thread that bounds the
    /// import.
    #[inline]
    fn skip_plain(&mut self) {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        // the high bit of each byte below `n`; a byte above one so marked may be marked too
        // (the subtraction's borrow), so only the lowest mark is sure, which is the one used
        let below = |w: u64, n: u64| w.wrapping_sub(n * ONES) & !w & HIGH;
        while let Some(word) = self.b.get(self.i..self.i + 8) {
            let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
            let stop = below(w ^ (u64::from(b'"') * ONES), 1)
                | below(w ^ (u64::from(b'\\') * ONES), 1)
                | below(w, 0x20);
            if stop != 0 {
                self.i += stop.trailing_zeros() as usize / 8;
                return;
            }
            self.i += 8;
        }
    }

    /// A string without escapes: where its contents lie.
    fn plain_string_at(&mut self) -> Option<(usize, usize)> {
        let start = self.i + 1;
        if self.skip_string()? {
            return None;
        }
        Some((start, self.i - 1))
    }

    /// A text field: a string without escapes, or `null`; where its contents lie.
    fn text_field(&mut self) -> Option<At> {
        if self.peek()? == b'n' {
            self.literal("null")?;
            return Some(None);
        }
        self.plain_string_at().map(Some)
    }

    /// A raw field: any scalar, objects and arrays only where `nested` allows; `null` is none.
    /// Where its text lies.
    fn raw_field(&mut self, nested: bool) -> Option<At> {
        let start = self.i;
        if !nested && matches!(self.peek()?, b'{' | b'[') {
            return None;
        }
        self.value(0)?;
        Some((&self.b[start..self.i] != b"null").then_some((start, self.i)))
    }

    /// The `args` field: as [`Self::raw_field`], and where it is an object whose keys have no
    /// escapes, its members appended to `members` (the range they took). Its members are read
    /// at the depth the object's own walk reads them, so where this walk fails for a reason
    /// other than an escaped key, that walk fails too.
    fn args_field(
        &mut self,
        nested: bool,
        members: &mut Vec<Member>,
    ) -> Option<(At, Option<std::ops::Range<usize>>)> {
        let (start, first) = (self.i, members.len());
        if nested && self.peek()? == b'{' && self.members(members).is_some() {
            return Some((Some((start, self.i)), Some(first..members.len())));
        }
        members.truncate(first);
        self.i = start;
        Some((self.raw_field(nested)?, None))
    }

    /// Moves past the object at `i`, appending its members, positions relative to its `{`;
    /// `None` at a key with escapes (or where the object is not valid JSON).
    fn members(&mut self, out: &mut Vec<Member>) -> Option<()> {
        let start = self.i;
        let at = |i: usize| (i - start) as u32;
        self.object(|p, (key_start, key_end)| {
            let value_start = p.i;
            p.value(1)?;
            out.push(Member {
                key: (at(key_start), at(key_end)),
                value: (at(value_start), at(p.i)),
            });
            Some(())
        })
    }

    /// Moves past the object whose `{` is at `i` and whose keys have no escapes, handing where
    /// each key's contents lie to `member`, which reads the value after it; `None` where serde
    /// must decide.
    fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, (usize, usize)) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let key = self.plain_string_at()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            member(self, key)?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word.as_bytes()).then_some(())?;
        self.i = end;
        Some(())
    }

    /// Moves past one JSON value.
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string().map(|_| ()),
            b'{' => self.container(depth, b'}', true),
            b'[' => self.container(depth, b']', false),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.number(),
        }
    }

    /// An object (`keyed`) or array, its opening bracket at `i`.
    fn container(&mut self, depth: usize, close: u8, keyed: bool) -> Option<()> {
        if depth == MAX_DEPTH {
            return None;
        }
        self.i += 1;
        self.ws();
        if self.peek()? == close {
            self.i += 1;
            return Some(());
        }
        loop {
            if keyed {
                self.skip_string()?;
                self.ws();
                self.eat(b':')?;
                self.ws();
            }
            self.value(depth + 1)?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                c if c == close => return Some(()),
                _ => return None,
            }
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, JSON's number.
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.some_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.i;
        self.digits();
        (self.i > start).then_some(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::raw::parse_event_serde;
    use super::*;

    /// The fast path never answers differently from serde: where it reads an event, serde
    /// reads the same fields; where serde refuses one, the fast path leaves it to serde.
    fn agrees(bytes: &[u8]) -> Option<bool> {
        let fast = parse_event(bytes)?;
        caches_agree(bytes);
        let serde = parse_event_serde(bytes).unwrap_or_else(|e| {
            panic!(
                "fast path read what serde refuses ({e}): {}",
                String::from_utf8_lossy(bytes)
            )
        });
        assert_eq!(fast, serde, "{}", String::from_utf8_lossy(bytes));
        Some(true)
    }

    /// Where the layout read the members of `args`, they are the pairs its text has; where it
    /// read `ts` and `dur`, their values.
    fn caches_agree(bytes: &[u8]) {
        let text = std::str::from_utf8(bytes).expect("read as UTF-8");
        let mut spans = Spans::default();
        spans.members.push(Member {
            key: (9, 9),
            value: (9, 9),
        }); // a list already in use
        let layout = layout(text, &mut spans).expect("read");
        let e = layout.event(text, &spans).expect("its own text");
        let time = |raw: Option<Raw>| raw.and_then(|r| micros_to_ns(r.get()));
        assert_eq!(e.times.ts, time(e.ts), "{text}");
        assert_eq!(e.times.dur, time(e.dur), "{text}");
        let Some(args) = e.args else {
            assert!(e.members.0.is_none());
            return;
        };
        let pairs = object_pairs(args.get());
        match e.members.0 {
            Some(members) => {
                let read: Vec<_> = members
                    .iter()
                    .map(|m| m.of(args.get()).expect("within args"))
                    .collect();
                let pairs = pairs.expect("object_pairs reads what the layout read");
                let pairs: Vec<_> = pairs.iter().map(|(k, v)| (k.as_str(), v.get())).collect();
                assert_eq!(read, pairs, "{text}");
            }
            None => assert!(
                pairs.is_none() || !args.get().starts_with('{'),
                "members not read: {text}"
            ),
        }
    }

    const TAKEN: &[&str] = &[
        r#"{}"#,
        r#"{"ph":"X","name":"aten::mm","cat":"cpu_op","pid":1,"tid":"t 2","ts":1712195495519689.047,"dur":41.321,"args":{"External id":1,"grid":[128,1,1],"x":{"y":[true,false,null,-0.5e-3]},"s":"a\"b\\c\/d\n"}}"#,
        r#" { "ph" : "B" ,	"ts" : -12 , "id2" : 5 , "tts" : 0 }"#,
        r#"{"ph":"X","ph":"B","name":"é ✓","ts":null,"dur":null,"cat":null}"#,
        r#"{"ph":"s","id":"0x1f","bp":"e","scope":"s","zz":3,"yy":"q","bind_id":"7","flow_in":true,"flow_out":false}"#,
        r#"{"ph":"C","name":"c","args":{"a":1E+5,"b":0,"c":-0.0,"d":{}},"sf":12,"esf":"3","cname":"good"}"#,
        r#"{"pid":"p","args":{"k\"ey":1,"ü":"ß"},"stack":null,"estack":null}"#,
    ];

    const LEFT_TO_SERDE: &[&str] = &[
        // escapes serde must read
        r#"{"name":"a\"b"}"#,
        r#"{"n\u0061me":"x"}"#,
        r#"{"args":{"a":"\u00e9"}}"#,
        // nested values outside args
        r#"{"stack":["a","b"]}"#,
        r#"{"id2":{"local":"0x1"}}"#,
        r#"{"zz":{"a":1}}"#,
        // not JSON
        r#"{"ts":01}"#,
        r#"{"ts":1.}"#,
        r#"{"ts":-}"#,
        r#"{"ts":1e}"#,
        r#"{"ts":.5}"#,
        r#"{"ts":+1}"#,
        r#"{"ts":1,}"#,
        "{\"name\":\"a\tb\"}",
        r#"{"ph":5}"#,
        r#"{"args":[1,2,]}"#,
        r#"{"args":{"a":tru}}"#,
        r#"{"args":{"a" 1}}"#,
        r#"{"args":{"a":1}"#,
        r#"{"ts":1}x"#,
        r#"{"ts":NaN}"#,
        r#"{"s":"\x"}"#,
    ];

    #[test]
    fn reads_plain_events_as_serde_does() {
        for t in TAKEN {
            assert_eq!(agrees(t.as_bytes()), Some(true), "not taken: {t}");
        }
    }

    #[test]
    fn leaves_escapes_odd_nesting_and_bad_json_to_serde() {
        for t in LEFT_TO_SERDE {
            assert_eq!(parse_event(t.as_bytes()), None, "taken: {t}");
        }
        assert_eq!(parse_event(b"{\"name\":\"\xff\"}"), None, "not UTF-8");
        // nesting deeper than the fast path checks
        let deep = format!(r#"{{"args":{}1{}}}"#, "[".repeat(70), "]".repeat(70));
        assert_eq!(parse_event(deep.as_bytes()), None);
        assert!(parse_event_serde(deep.as_bytes()).is_ok());
        let shallow = format!(r#"{{"args":{}1{}}}"#, "[".repeat(60), "]".repeat(60));
        assert_eq!(agrees(shallow.as_bytes()), Some(true));
    }

    fn mutated() -> impl Strategy<Value = Vec<u8>> {
        let alphabet: &[u8] = b"{}[]\":,\\ 0123456789.eE+-tfnulrsxa\t\xc3\xa9";
        let edit = (
            0usize..400,
            0u8..3,
            proptest::sample::select(alphabet.to_vec()),
        );
        (
            proptest::sample::select(TAKEN.iter().skip(1).copied().collect::<Vec<_>>()),
            proptest::collection::vec(edit, 1..4),
        )
            .prop_map(|(seed, edits)| {
                let mut b = seed.as_bytes().to_vec();
                for (at, op, c) in edits {
                    let at = at % (b.len() + 1);
                    match op {
                        0 => b.insert(at, c),
                        1 if at < b.len() => {
                            b.remove(at);
                        }
                        _ if at < b.len() => b[at] = c,
                        _ => b.push(c),
                    }
                }
                b
            })
    }

    proptest! {
        #[test]
        fn never_disagrees_with_serde_on_mutated_events(bytes in mutated()) {
            agrees(&bytes);
        }
    }
}
