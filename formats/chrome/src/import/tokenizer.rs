//! Splits a Chrome JSON document into events without parsing it whole: the input is read in
//! chunks, each event object is found by the [`fast`] path's walk (which lays the event out on
//! the way) or, where that path leaves the event to serde, by brace matching (aware of strings
//! and escapes), and handed out as a byte slice; top-level keys other than `traceEvents` come
//! out as raw values.
//!
//! Accepted as viewers accept them: the object or the bare-array form, `traceEvents` anywhere
//! among the keys, a missing `]` or `]}`, trailing and leading commas, `{}` padding, and a last
//! event torn off by a crash (reported, not an error).

use std::io::{self, Read};

use super::fast::{self, Layout, Spans};

const CHUNK: usize = 4 << 20;

/// The least room a read is given: the input's `BufReader` capacity, below which it would
/// copy the bytes through its own buffer.
const MIN_READ: usize = tracex_ir::io::READ_SIZE;

/// Room beyond [`MIN_READ`] for the piece that straddles a read, moved to the front before
/// the next one: with it, a buffer of one read's size need not grow for the second read (it
/// grew by [`CHUNK`], 4 MB zeroed and faulted in, for every input, however small).
const SLACK: usize = 64 << 10;

/// One piece of the document.
#[derive(Debug)]
pub enum Item<'a> {
    /// An element of the events array; `bytes` is one JSON value (normally an object). Its
    /// `layout` where the fast path read it while finding its end (its spans are in the lists
    /// handed to [`Tokenizer::next_item`]; its bytes are not yet checked as UTF-8).
    Event {
        bytes: &'a [u8],
        offset: u64,
        index: u64,
        layout: Option<Layout>,
    },
    /// A top-level key other than `traceEvents`, with its raw value.
    Meta {
        key: String,
        raw: &'a [u8],
        offset: u64,
    },
}

/// Irregularities the tokenizer accepted; the importer turns them into diagnostics.
#[derive(Debug, Default, Clone)]
pub struct Leniency {
    /// The events array (or the object around it) was never closed.
    pub unterminated: Option<u64>,
    /// An event or value cut off by the end of the input: its byte offset.
    pub torn: Option<u64>,
    /// Bytes after the end of the document: offset of the first one.
    pub trailing: Option<u64>,
    /// Commas with nothing before them (`[,{`, `,,`) or a comma before `]`.
    pub stray_commas: u64,
    /// The document was an array (`[...]`) rather than an object.
    pub array_form: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Start,
    TopObject,
    Events { in_object: bool },
    AfterTop,
    Done,
}

pub struct Tokenizer<R> {
    r: R,
    /// Input read so far and not yet discarded: `buf[..end]`; the rest is spare room.
    buf: Vec<u8>,
    end: usize,
    pos: usize,
    base: u64,
    eof: bool,
    state: State,
    index: u64,
    expect_value: bool,
    pub leniency: Leniency,
}

/// A malformed document: what and where.
#[derive(Debug)]
pub struct SyntaxError {
    pub offset: u64,
    pub message: String,
}

pub enum TokError {
    Io(io::Error),
    Syntax(SyntaxError),
}

impl From<io::Error> for TokError {
    fn from(e: io::Error) -> Self {
        TokError::Io(e)
    }
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

impl<R: Read> Tokenizer<R> {
    pub fn new(r: R) -> Self {
        Tokenizer {
            r,
            buf: vec![0; MIN_READ + SLACK],
            end: 0,
            pos: 0,
            base: 0,
            eof: false,
            state: State::Start,
            index: 0,
            expect_value: true,
            leniency: Leniency::default(),
        }
    }

    /// Absolute offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Reads more input; false at end of input. Only bytes before `pos` may be discarded.
    fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 && self.pos >= self.end / 2 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.base += self.pos as u64;
            self.pos = 0;
        }
        // `buf` stays initialised past `end`: it is zeroed only where it grows, not at every
        // read (a memset of each 4 MB read was a tenth of the reading thread's copies). It
        // starts at one read's worth and [`SLACK`], and grows by 4 MB only when less than one
        // read's worth is free (a piece larger than the slack):
        // growing it before every read (the first returns only the sniffed head) copied and
        // faulted in megabytes, a third of converting a small trace.
        if self.buf.len() - self.end < MIN_READ {
            self.buf.resize(self.end + CHUNK, 0);
        }
        let n = loop {
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        self.end += n;
        if n == 0 {
            self.eof = true;
        }
        Ok(n > 0)
    }

    /// Skips whitespace; returns the next byte without consuming it, or `None` at end of input.
    fn peek(&mut self) -> io::Result<Option<u8>> {
        loop {
            while self.pos < self.end {
                let b = self.buf[self.pos];
                if !is_ws(b) {
                    return Ok(Some(b));
                }
                self.pos += 1;
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    fn syntax(&self, message: impl Into<String>) -> TokError {
        TokError::Syntax(SyntaxError {
            offset: self.offset(),
            message: message.into(),
        })
    }

    /// Length of the object starting at `pos` (which is `{`), or `None` if the input ends first.
    fn scan_object(&mut self) -> io::Result<Option<usize>> {
        let mut rel = 1usize;
        let mut depth = 1u32;
        let mut in_str = false;
        let mut escape = false;
        loop {
            let hay = &self.buf[self.pos..self.end];
            while rel < hay.len() {
                if escape {
                    escape = false;
                    rel += 1;
                    continue;
                }
                if in_str {
                    match memchr::memchr2(b'"', b'\\', &hay[rel..]) {
                        Some(i) => {
                            rel += i;
                            if hay[rel] == b'\\' {
                                escape = true;
                            } else {
                                in_str = false;
                            }
                            rel += 1;
                        }
                        None => rel = hay.len(),
                    }
                } else {
                    match memchr::memchr3(b'{', b'}', b'"', &hay[rel..]) {
                        Some(i) => {
                            rel += i;
                            match hay[rel] {
                                b'{' => depth += 1,
                                b'}' => {
                                    depth -= 1;
                                    if depth == 0 {
                                        return Ok(Some(rel + 1));
                                    }
                                }
                                _ => in_str = true,
                            }
                            rel += 1;
                        }
                        None => rel = hay.len(),
                    }
                }
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Length of any JSON value starting at `pos`, or `None` if the input ends first.
    fn scan_value(&mut self) -> io::Result<Option<usize>> {
        let mut rel = 0usize;
        let mut depth = 0u32;
        let mut in_str = false;
        let mut escape = false;
        let mut started = false;
        loop {
            let hay = &self.buf[self.pos..self.end];
            while rel < hay.len() {
                let b = hay[rel];
                if in_str {
                    if escape {
                        escape = false;
                    } else if b == b'\\' {
                        escape = true;
                    } else if b == b'"' {
                        in_str = false;
                        if depth == 0 {
                            return Ok(Some(rel + 1));
                        }
                    }
                    rel += 1;
                    continue;
                }
                match b {
                    b'"' => in_str = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        if depth == 0 {
                            return Ok(Some(rel));
                        }
                        depth -= 1;
                        if depth == 0 {
                            return Ok(Some(rel + 1));
                        }
                    }
                    b',' if depth == 0 => return Ok(Some(rel)),
                    b if is_ws(b) && depth == 0 && started => return Ok(Some(rel)),
                    _ => {}
                }
                started = true;
                rel += 1;
            }
            if !self.fill()? {
                // a scalar at the very end of the input is complete
                return Ok(if depth == 0 && !in_str && started {
                    Some(rel)
                } else {
                    None
                });
            }
        }
    }

    /// Reads a top-level key string at `pos` (which is `"`).
    fn read_key(&mut self) -> Result<Option<String>, TokError> {
        let Some(len) = self.scan_value()? else {
            return Ok(None);
        };
        let raw = &self.buf[self.pos..self.pos + len];
        let key: String =
            serde_json::from_slice(raw).map_err(|e| self.syntax(format!("bad object key: {e}")))?;
        self.pos += len;
        Ok(Some(key))
    }

    /// The next item, or `None` at the end of the document. Events the fast path reads are laid
    /// out into `spans` on the way.
    pub fn next_item(&mut self, spans: &mut Spans) -> Result<Option<Item<'_>>, TokError> {
        loop {
            match self.state {
                State::Start => {
                    // a UTF-8 byte order mark is tolerated
                    if self.end == 0 {
                        self.fill()?;
                    }
                    if self.buf[self.pos..self.end].starts_with(b"\xEF\xBB\xBF") {
                        self.pos += 3;
                    }
                    match self.peek()? {
                        Some(b'{') => {
                            self.pos += 1;
                            self.state = State::TopObject;
                        }
                        Some(b'[') => {
                            self.pos += 1;
                            self.leniency.array_form = true;
                            self.state = State::Events { in_object: false };
                            self.expect_value = true;
                        }
                        Some(b) => {
                            return Err(self.syntax(format!(
                                "not a Chrome trace: expected a JSON object or array, found {:?}",
                                b as char
                            )))
                        }
                        None => {
                            return Err(self.syntax("empty input: expected a JSON object or array"))
                        }
                    }
                }
                State::TopObject => match self.peek()? {
                    None => {
                        self.leniency.unterminated.get_or_insert(self.offset());
                        self.state = State::Done;
                    }
                    Some(b',') => self.pos += 1,
                    Some(b'}') => {
                        self.pos += 1;
                        self.state = State::AfterTop;
                    }
                    Some(b'"') => {
                        let key_at = self.offset();
                        let Some(key) = self.read_key()? else {
                            self.leniency.torn.get_or_insert(key_at);
                            self.state = State::Done;
                            continue;
                        };
                        match self.peek()? {
                            Some(b':') => self.pos += 1,
                            None => {
                                self.leniency.torn.get_or_insert(key_at);
                                self.state = State::Done;
                                continue;
                            }
                            Some(_) => {
                                return Err(self.syntax(format!("expected ':' after key {key:?}")))
                            }
                        }
                        let Some(first) = self.peek()? else {
                            self.leniency.torn.get_or_insert(key_at);
                            self.state = State::Done;
                            continue;
                        };
                        if key == "traceEvents" && first == b'[' {
                            self.pos += 1;
                            self.state = State::Events { in_object: true };
                            self.expect_value = true;
                            continue;
                        }
                        let offset = self.offset();
                        match self.scan_value()? {
                            Some(len) => {
                                let start = self.pos;
                                self.pos += len;
                                return Ok(Some(Item::Meta {
                                    key,
                                    raw: &self.buf[start..start + len],
                                    offset,
                                }));
                            }
                            None => {
                                self.leniency.torn.get_or_insert(key_at);
                                self.state = State::Done;
                            }
                        }
                    }
                    Some(b) => {
                        return Err(self.syntax(format!(
                            "expected a key or '}}' in the top-level object, found {:?}",
                            b as char
                        )))
                    }
                },
                State::Events { in_object } => match self.peek()? {
                    None => {
                        self.leniency.unterminated.get_or_insert(self.offset());
                        self.state = State::Done;
                    }
                    Some(b',') => {
                        if self.expect_value {
                            self.leniency.stray_commas += 1;
                        }
                        self.expect_value = true;
                        self.pos += 1;
                    }
                    Some(b']') => {
                        if self.expect_value && self.index > 0 {
                            self.leniency.stray_commas += 1;
                        }
                        self.pos += 1;
                        self.state = if in_object {
                            State::TopObject
                        } else {
                            State::AfterTop
                        };
                    }
                    Some(first) => {
                        if !self.expect_value {
                            return Err(self.syntax("expected ',' or ']' between events"));
                        }
                        let offset = self.offset();
                        let mut layout = None;
                        let len = if first == b'{' {
                            // most events: the fast path's walk finds the end; else (an event
                            // serde must read, or one the buffer cuts) the brace scan does
                            match fast::layout_prefix(&self.buf[self.pos..self.end], spans) {
                                Some((read, len)) => {
                                    layout = Some(read);
                                    Some(len)
                                }
                                None => self.scan_object()?,
                            }
                        } else {
                            self.scan_value()?
                        };
                        match len {
                            Some(len) => {
                                let start = self.pos;
                                self.pos += len;
                                let index = self.index;
                                self.index += 1;
                                self.expect_value = false;
                                return Ok(Some(Item::Event {
                                    bytes: &self.buf[start..start + len],
                                    offset,
                                    index,
                                    layout,
                                }));
                            }
                            None => {
                                self.leniency.torn.get_or_insert(offset);
                                self.leniency.unterminated.get_or_insert(offset);
                                self.state = State::Done;
                            }
                        }
                    }
                },
                State::AfterTop => {
                    match self.peek()? {
                        None => {}
                        Some(_) => {
                            self.leniency.trailing.get_or_insert(self.offset());
                        }
                    }
                    self.state = State::Done;
                }
                State::Done => return Ok(None),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events and meta keys of `doc`, read in 3-byte pieces, and the same read whole: both
    /// give the same items, events found by the fast path's walk where it read them whole.
    fn items(doc: &str) -> (Vec<String>, Leniency) {
        let slow = items_from(Slow(doc.as_bytes()));
        let whole = items_from(doc.as_bytes());
        assert_eq!(slow.0, whole.0, "{doc}");
        assert_eq!(format!("{:?}", slow.1), format!("{:?}", whole.1), "{doc}");
        slow
    }

    struct Slow<'a>(&'a [u8]);
    impl Read for Slow<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            // hand out 3 bytes at a time to exercise refills inside strings and escapes
            let n = self.0.len().min(3).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// Records how much room each read was given.
    struct Asked<R> {
        r: R,
        asked: Vec<usize>,
    }
    impl<R: Read> Read for Asked<R> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            self.asked.push(out.len());
            self.r.read(out)
        }
    }

    #[test]
    fn reads_get_a_buffer_reads_worth_without_the_buffer_growing() {
        // 5 MB of small events, read as the CLI's input is: the sniffed head first, then the file
        let mut doc = String::from("[");
        let mut pushed = 1;
        while doc.len() < 5 << 20 {
            doc.push_str(r#"{"name":"kernel","ph":"X","ts":12.5,"dur":3,"pid":1,"tid":2},"#);
            pushed += 1;
        }
        doc.push_str(r#"{"name":"last","ph":"i","ts":1}]"#);
        let (head, rest) = doc.as_bytes().split_at(64 << 10);
        let mut t = Tokenizer::new(Asked {
            r: head.chain(rest),
            asked: Vec::new(),
        });
        let mut spans = Spans::default();
        let mut events = 0;
        while let Ok(Some(item)) = t.next_item(&mut spans) {
            spans.clear();
            events += matches!(item, Item::Event { .. }) as usize;
        }
        assert_eq!(events, pushed);
        assert_eq!(t.buf.len(), MIN_READ + SLACK, "the buffer grew");
        // every read after the head's asks for at least what bypasses the CLI's `BufReader`
        let asked = &t.r.asked;
        assert!(asked.len() > 5, "{asked:?}");
        assert!(asked[1..].iter().all(|&n| n >= MIN_READ), "{asked:?}");
    }

    fn items_from(r: impl Read) -> (Vec<String>, Leniency) {
        let mut t = Tokenizer::new(r);
        let mut out = Vec::new();
        let mut spans = Spans::default();
        loop {
            match t.next_item(&mut spans) {
                Ok(Some(Item::Event { bytes, layout, .. })) => {
                    let text = String::from_utf8(bytes.to_vec()).unwrap();
                    if let Some(layout) = layout {
                        // the walk ended where the event ends, and read it as a walk over the
                        // event alone does (the caches of args and times included)
                        let read = layout.event(&text, &spans).expect("on the event");
                        let mut alone = Spans::default();
                        let again = fast::layout(&text, &mut alone).expect("read alone");
                        let again = again.event(&text, &alone).expect("on the event");
                        assert_eq!(format!("{read:?}"), format!("{again:?}"), "{text}");
                    }
                    out.push(text)
                }
                Ok(Some(Item::Meta { key, raw, .. })) => out.push(format!(
                    "{key}={}",
                    String::from_utf8(raw.to_vec()).unwrap()
                )),
                Ok(None) => break,
                Err(TokError::Syntax(e)) => panic!("{}", e.message),
                Err(TokError::Io(e)) => panic!("{e}"),
            }
        }
        (out, t.leniency)
    }

    #[test]
    fn object_form_with_keys_around_events() {
        let (v, l) = items(
            r#"{"a":1, "traceEvents":[{"ph":"X","name":"}\"{"},{}], "b":{"c":[1,2]}, "d":"x"}"#,
        );
        assert_eq!(
            v,
            vec![
                "a=1",
                r#"{"ph":"X","name":"}\"{"}"#,
                "{}",
                r#"b={"c":[1,2]}"#,
                r#"d="x""#
            ]
        );
        assert!(!l.array_form && l.unterminated.is_none() && l.trailing.is_none());
    }

    #[test]
    fn unterminated_and_trailing_commas() {
        let (v, l) = items(r#"[{"ph":"B"},{"ph":"E"},"#);
        assert_eq!(v.len(), 2);
        assert!(l.unterminated.is_some() && l.torn.is_none());
        let (v, l) = items(r#"[,{"ph":"B"},,{"ph":"E"},]"#);
        assert_eq!(v.len(), 2);
        assert_eq!(l.stray_commas, 3);
        let (v, l) = items(r#"{"traceEvents":[{"ph":"B"},{"ph":"E","na"#);
        assert_eq!(v.len(), 1);
        assert!(l.torn.is_some());
        let (v, l) = items("[] x");
        assert!(v.is_empty() && l.trailing.is_some());
    }

    #[test]
    fn syntax_errors_have_offsets() {
        let mut t = Tokenizer::new(&b"  hello"[..]);
        match t.next_item(&mut Spans::default()) {
            Err(TokError::Syntax(e)) => assert_eq!(e.offset, 2),
            _ => panic!("expected a syntax error"),
        }
        let mut t = Tokenizer::new(&b"[{} {}]"[..]);
        let mut spans = Spans::default();
        assert!(matches!(t.next_item(&mut spans), Ok(Some(_))));
        assert!(matches!(t.next_item(&mut spans), Err(TokError::Syntax(_))));
    }
}
