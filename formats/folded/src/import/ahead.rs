//! Reading ahead: a thread of its own reads the lines, checks them as text and parses them
//! (everything that needs no definitions), and hands them over in batches; the importing thread
//! only finds threads and stacks and emits. Parsing was most of the importing thread's time on
//! uprobe stacks, while the other core waited: the GPU merge imports them before anything else.

use std::borrow::Cow;
use std::io::{self, Read};
use std::ops::Range;

use tracex_ir::ahead::{self, Handoff, Msg};
use tracex_ir::io::LineReader;
use tracex_ir::DiagKind;

use super::{extended, plain};
use crate::options::Dialect;

/// What a line is, as far as it can be told without the trace's definitions. Ranges are in the
/// batch's text.
#[derive(Debug)]
pub enum Kind {
    NotText,
    Blank,
    Comment,
    Plain {
        stack: Range<usize>,
        counts: plain::Counts,
    },
    PlainBad(&'static DiagKind),
    Extended(Fields),
    ExtendedBad(&'static DiagKind, String),
    /// Not parsed yet: the importing thread parses it ([`Batch::parse`]).
    Unparsed,
}

/// An extended line's fields, its texts as ranges of the batch's text.
#[derive(Debug)]
pub struct Fields {
    ts: i64,
    comm: Range<usize>,
    pid: i64,
    tid: i64,
    cpu: u32,
    stack: Range<usize>,
}

impl Fields {
    /// The line, its texts in `text`.
    pub fn line<'a>(&self, text: &'a str) -> extended::ExtLine<'a> {
        extended::ExtLine {
            ts: self.ts,
            comm: &text[self.comm.clone()],
            pid: self.pid,
            tid: self.tid,
            cpu: self.cpu,
            stack: &text[self.stack.clone()],
        }
    }
}

/// A line: its number, whether terminal escapes were stripped from it, its trimmed text (a
/// range of the batch's text; empty for a line that is not text, blank or a comment) and kind.
#[derive(Debug)]
pub struct Line {
    pub no: u64,
    pub ansi: bool,
    pub text: Range<usize>,
    pub kind: Kind,
}

/// Lines read ahead, their texts back to back.
#[derive(Default)]
pub struct Batch {
    pub text: String,
    pub lines: Vec<Line>,
    /// The dialect of its lines left [`Kind::Unparsed`] for the importing thread, if any.
    unparsed: Option<Dialect>,
}

impl Batch {
    /// Parses the lines the reader left for this thread.
    fn parse(&mut self) {
        let Some(dialect) = self.unparsed.take() else {
            return;
        };
        for line in &mut self.lines {
            if let Kind::Unparsed = line.kind {
                line.kind = parse(dialect, &self.text[line.text.clone()], line.text.start);
            }
        }
    }
}

/// Decides each line's dialect (on the first that is not blank or a comment, when the options
/// leave it open) and parses it.
pub struct Classifier {
    pub dialect: Dialect,
    /// Whether lines are only checked as text, trimmed and told apart from blanks and
    /// comments, and left [`Kind::Unparsed`].
    pub defer: bool,
}

impl Classifier {
    /// Parses line `no` into `batch`.
    pub fn push(&mut self, batch: &mut Batch, no: u64, bytes: &[u8]) {
        let start = batch.text.len();
        let (ansi, (text, kind)) = match std::str::from_utf8(bytes) {
            Err(_) => (false, (start..start, Kind::NotText)),
            Ok(text) => match extended::strip_ansi(text) {
                Cow::Owned(s) => (true, self.classify(&mut batch.text, &s)),
                Cow::Borrowed(s) => (false, self.classify(&mut batch.text, s)),
            },
        };
        batch.lines.push(Line {
            no,
            ansi,
            text,
            kind,
        });
    }

    /// The kind of a line of text; its trimmed text is appended to `out` unless it is blank
    /// or a comment.
    fn classify(&mut self, out: &mut String, text: &str) -> (Range<usize>, Kind) {
        let start = out.len();
        let t = text.trim();
        if t.is_empty() {
            return (start..start, Kind::Blank);
        }
        if t.starts_with('#') {
            return (start..start, Kind::Comment);
        }
        if self.dialect == Dialect::Auto {
            self.dialect = if extended::looks_extended(t) {
                Dialect::Extended
            } else {
                Dialect::Plain
            };
        }
        let kind = match self.defer {
            true => Kind::Unparsed,
            false => parse(self.dialect, t, start),
        };
        out.push_str(t);
        (start..start + t.len(), kind)
    }
}

/// The kind of the trimmed line `t`, which is not blank or a comment, in `dialect`; its parts
/// as ranges of the batch's text, where `t` starts at `start`.
fn parse(dialect: Dialect, t: &str, start: usize) -> Kind {
    // where a part of `t` lies in the batch's text
    let at = |part: &str| {
        let r = ahead::span(t, part);
        start + r.start..start + r.end
    };
    match dialect {
        Dialect::Extended => match extended::parse(t) {
            Ok(l) => Kind::Extended(Fields {
                ts: l.ts,
                comm: at(l.comm),
                pid: l.pid,
                tid: l.tid,
                cpu: l.cpu,
                stack: at(l.stack),
            }),
            Err((kind, why)) => Kind::ExtendedBad(kind, why),
        },
        _ => match plain::parse(t) {
            plain::Line::Stack { stack, counts } => Kind::Plain {
                stack: at(stack),
                counts,
            },
            plain::Line::Bad(kind) => Kind::PlainBad(kind),
        },
    }
}

impl ahead::Batch for Batch {
    fn clear(&mut self) {
        self.text.clear();
        self.lines.clear();
        self.unparsed = None;
    }

    fn reserve_like(&mut self, like: &Batch, bytes: usize, target: usize) {
        ahead::room_text(&mut self.text, like.text.len(), (bytes, target));
        ahead::room(&mut self.lines, like.lines.len(), (bytes, target));
    }
}

/// The reader thread: fills batches until the input ends, a read fails, or the importer hangs
/// up.
fn read<R: Read>(reader: R, dialect: Dialect, out: &mut Handoff<Msg<Batch>, Batch>) {
    let mut lines = LineReader::new(reader);
    let mut classifier = Classifier {
        dialect,
        defer: false,
    };
    let mut batch = Batch::default();
    loop {
        if batch.lines.is_empty() {
            // a new batch: its lines are parsed here only while the importing thread is behind
            classifier.defer = !out.behind();
        }
        match lines.next_line() {
            Ok(Some((no, bytes))) => {
                classifier.push(&mut batch, no, bytes);
                if classifier.defer {
                    // (the dialect is known once a line was parsed or deferred)
                    batch.unparsed = Some(classifier.dialect);
                }
                // blank lines and comments hold no text, but take room
                let bytes = batch.text.len() + batch.lines.len() * std::mem::size_of::<Line>();
                if !out.offer(&mut batch, bytes, Msg::Batch) {
                    return;
                }
            }
            Ok(None) => return out.last(Msg::Batch(batch)),
            Err(e) => {
                out.last(Msg::Batch(batch));
                return out.last(Msg::Failed(e));
            }
        }
    }
}

/// Reads and parses the lines of `reader` on a thread of its own and hands each to `each` on
/// this one, in order, with its batch's text. A read error comes after every line before it;
/// an error of `each` stops the reading.
pub fn lines<R: Read + Send, E: From<io::Error>>(
    reader: R,
    dialect: Dialect,
    mut each: impl FnMut(&Line, &str) -> Result<(), E>,
) -> Result<(), E> {
    ahead::read_ahead(
        "folded read-ahead",
        (ahead::FIRST_BATCH, ahead::BATCH_BYTES),
        |out| read(reader, dialect, out),
        |batch: &mut Batch| {
            batch.parse();
            for line in &batch.lines {
                each(line, &batch.text)?;
            }
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each line as (number, ansi, text, kind) in a comparable form.
    fn shown(line: &Line, text: &str) -> String {
        let kind = match &line.kind {
            Kind::Plain { stack, counts } => format!("plain {:?} {counts:?}", &text[stack.clone()]),
            Kind::Extended(fields) => format!("{:?}", fields.line(text)),
            other => format!("{other:?}"),
        };
        format!(
            "{} {} {:?} {kind}",
            line.no,
            line.ansi,
            &text[line.text.clone()]
        )
    }

    /// Lines of every kind, enough of them for many batches, the last without a newline.
    fn input() -> Vec<u8> {
        let mut v = Vec::new();
        for i in 0..40_000u64 {
            let line = match i % 9 {
                0 => "# a comment".to_string(),
                1 => String::new(),
                2 => format!("\u{1b}[31m{i}\u{1b}[0m app 7 8 1 main;f{}", i % 13),
                3 => format!("{i} app 7 {} 0 main;g;h(int, char)", i % 3),
                4 => format!("{i}x app 7 8 1 main"),
                5 => "12 a 2 3".to_string(),
                _ => format!("{i} app 7 8 {} main;f{};leaf", i % 4, i % 101),
            };
            v.extend_from_slice(line.as_bytes());
            v.push(b'\n');
        }
        v.extend_from_slice(b"\xff\xfe not text\n17 app 7 8 1 last;line");
        v
    }

    #[test]
    fn lines_read_ahead_are_every_line_in_order_as_parsed_here() {
        let data = input();
        // each line parsed here, on the reader or left for the importing thread
        let parsed_here = |defer: bool| {
            let mut shown_lines = Vec::new();
            let mut reader = LineReader::new(&data[..]);
            let mut classifier = Classifier {
                dialect: Dialect::Auto,
                defer,
            };
            while let Some((no, bytes)) = reader.next_line().unwrap() {
                let mut batch = Batch::default();
                classifier.push(&mut batch, no, bytes);
                batch.unparsed = defer.then_some(classifier.dialect);
                batch.parse();
                shown_lines.push(shown(&batch.lines[0], &batch.text));
            }
            shown_lines
        };
        let direct = parsed_here(false);
        assert_eq!(direct, parsed_here(true));
        let mut ahead = Vec::new();
        lines(&data[..], Dialect::Auto, |line, text| {
            ahead.push(shown(line, text));
            Ok::<(), io::Error>(())
        })
        .unwrap();
        assert_eq!(ahead.len(), 40_002);
        if let Some(i) = (0..ahead.len()).find(|&i| ahead.get(i) != direct.get(i)) {
            panic!(
                "line {i}: {} read ahead, {:?} here",
                ahead[i],
                direct.get(i)
            );
        }
        assert_eq!(ahead.len(), direct.len());
        assert!(
            ahead[2].contains("true \"2 app 7 8 1 main;f2\" ExtLine { ts: 2, comm: \"app\""),
            "{}",
            ahead[2]
        );
        assert!(ahead[40_000].contains("NotText"), "{}", ahead[40_000]);
    }

    /// A reader that fails after `left` bytes.
    struct Failing<'a> {
        data: &'a [u8],
        left: usize,
    }

    impl Read for Failing<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.left == 0 {
                return Err(io::Error::other("disk on fire"));
            }
            let n = buf.len().min(self.left).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            self.left -= n;
            Ok(n)
        }
    }

    #[test]
    fn a_read_error_comes_after_the_lines_before_it_and_an_error_of_the_importer_stops() {
        let data = input();
        let mut seen = 0;
        let err = lines(
            Failing {
                data: &data,
                left: data.len() / 2,
            },
            Dialect::Auto,
            |_, _| {
                seen += 1;
                Ok::<(), io::Error>(())
            },
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "disk on fire");
        // every whole line of the first half came through, then the error
        let whole = data[..data.len() / 2]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        assert_eq!(seen, whole);
        let mut seen = 0;
        let err = lines(&data[..], Dialect::Auto, |_, _| {
            seen += 1;
            match seen {
                5 => Err(io::Error::other("stop")),
                _ => Ok(()),
            }
        })
        .unwrap_err();
        assert_eq!((err.to_string(), seen), ("stop".to_string(), 5));
    }
}
