//! Reading ahead on a second thread. There the input is read (and decompressed), cut into events
//! by the [`tokenizer`](super::tokenizer) and each event read by the [`fast`] path, while the
//! importer's thread turns the previous batch into IR events: on two cores, the text work of
//! an import runs beside its IR work. Batches are copied out of the tokenizer's buffer, hold
//! up to [`BATCH_BYTES`] of text, and at most [`AHEAD`] wait, so memory stays bounded; spent
//! batches go back to the reader to be filled again.

use std::io::Read;
use std::ops::Range;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};

use tracex_ir::ahead::{self, Batch as _, Handoff, BATCH_BYTES, FIRST_BATCH};
use tracex_ir::apart::{self, Held};

use super::fast::{self, Layout, Spans};
use super::raw::RawEvent;
use super::tokenizer::{Item, Leniency, TokError, Tokenizer};

/// Batches the reader may run ahead of the importer.
const AHEAD: usize = 4;

/// One piece of the document, handed to the importer's thread in input order.
pub enum Piece<'a> {
    /// An element of the events array, with its fields where the fast path could read them
    /// (`None`: the caller parses it with serde, which decides). Lent, not moved: an event's
    /// fields take half a kilobyte, and moving them to the importer was a twentieth of its time.
    Event {
        bytes: &'a [u8],
        offset: u64,
        index: u64,
        parsed: Option<&'a RawEvent<'a>>,
    },
    /// A top-level key other than `traceEvents`, with its raw value.
    Meta {
        key: &'a str,
        raw: &'a [u8],
        offset: u64,
    },
}

/// What a batch records of one piece: where its bytes lie in the batch.
enum Found {
    /// An event the fast path read: `read` of the batch's text.
    Read {
        read: Range<usize>,
        offset: u64,
        index: u64,
        layout: Layout,
    },
    /// Any other event: `bytes` of the batch's other bytes.
    Other {
        bytes: Range<usize>,
        offset: u64,
        index: u64,
    },
    Meta {
        key: String,
        raw: Range<usize>,
        offset: u64,
    },
}

/// Pieces in input order; the events the fast path read are kept apart as text (validated
/// UTF-8 once, on the reader thread), the rest as bytes.
#[derive(Default)]
struct Batch {
    text: String,
    other: Vec<u8>,
    found: Vec<Found>,
    spans: Spans,
}

/// Appends `bytes` to `to`; where they went.
fn append(to: &mut Vec<u8>, bytes: &[u8]) -> Range<usize> {
    let start = to.len();
    to.extend_from_slice(bytes);
    start..to.len()
}

impl ahead::Batch for Batch {
    fn clear(&mut self) {
        self.text.clear();
        self.other.clear();
        self.found.clear();
        self.spans.clear();
    }

    fn reserve_like(&mut self, like: &Batch, bytes: usize, target: usize) {
        let scale = (bytes, target);
        ahead::room_text(&mut self.text, like.text.len(), scale);
        ahead::room(&mut self.other, like.other.len(), scale);
        ahead::room(&mut self.found, like.found.len(), scale);
        ahead::room(&mut self.spans.fields, like.spans.fields.len(), scale);
        ahead::room(&mut self.spans.members, like.spans.members.len(), scale);
    }
}

impl Batch {
    /// Copies `item` in; the bytes the batch holds.
    fn push(&mut self, item: Item<'_>) -> usize {
        match item {
            Item::Event {
                bytes,
                offset,
                index,
                layout,
            } => {
                let text = std::str::from_utf8(bytes).ok();
                let layout = match (text, layout) {
                    (Some(_), Some(layout)) => Some(layout),
                    // laid out by the tokenizer, but not UTF-8: serde reports it
                    (None, Some(layout)) => {
                        self.spans.forget(&layout);
                        None
                    }
                    (Some(t), None) => fast::layout(t, &mut self.spans),
                    (None, None) => None,
                };
                match text.zip(layout) {
                    Some((text, layout)) => {
                        let start = self.text.len();
                        self.text.push_str(text);
                        self.found.push(Found::Read {
                            read: start..self.text.len(),
                            offset,
                            index,
                            layout,
                        });
                    }
                    None => self.found.push(Found::Other {
                        bytes: append(&mut self.other, bytes),
                        offset,
                        index,
                    }),
                }
            }
            Item::Meta { key, raw, offset } => self.found.push(Found::Meta {
                key,
                raw: append(&mut self.other, raw),
                offset,
            }),
        }
        self.text.len() + self.other.len()
    }

    /// Hands each piece to `each`, in order; stops at its first error.
    fn each<E>(&self, each: &mut impl FnMut(Piece<'_>) -> Result<(), E>) -> Result<(), E> {
        // one event's fields, written over for each event
        let mut parsed = RawEvent::default();
        for found in &self.found {
            let piece = match found {
                Found::Read {
                    read,
                    offset,
                    index,
                    layout,
                } => {
                    let text = &self.text[read.clone()];
                    let read = layout.event_into(text, &self.spans, &mut parsed);
                    Piece::Event {
                        bytes: text.as_bytes(),
                        offset: *offset,
                        index: *index,
                        parsed: read.map(|()| &parsed),
                    }
                }
                Found::Other {
                    bytes,
                    offset,
                    index,
                } => Piece::Event {
                    bytes: &self.other[bytes.clone()],
                    offset: *offset,
                    index: *index,
                    parsed: None,
                },
                Found::Meta { key, raw, offset } => Piece::Meta {
                    key,
                    raw: &self.other[raw.clone()],
                    offset: *offset,
                },
            };
            each(piece)?;
        }
        Ok(())
    }
}

enum Msg {
    Batch(Batch),
    /// The end of the document, with what the tokenizer accepted on the way.
    Done(Leniency),
    Failed(TokError),
}

/// The reader thread: fills batches (reusing spent ones from `spent`) until the document ends,
/// an error stops it, or the importer hangs up.
fn read_ahead<R: Read>(reader: R, tx: SyncSender<Msg>, spent: Receiver<Batch>, held: Held) {
    let mut tok = Tokenizer::new(reader);
    let mut batch = Batch::default();
    let mut out = Handoff::new(tx, spent, FIRST_BATCH, BATCH_BYTES).held(held);
    loop {
        match tok.next_item(&mut batch.spans) {
            Ok(Some(item)) => {
                let bytes = batch.push(item);
                if !out.offer(&mut batch, bytes, Msg::Batch) {
                    return;
                }
            }
            Ok(None) => {
                out.last(Msg::Batch(batch));
                out.last(Msg::Done(std::mem::take(&mut tok.leniency)));
                return;
            }
            Err(e) => {
                out.last(Msg::Batch(batch));
                out.last(Msg::Failed(e));
                return;
            }
        }
    }
}

/// Reads the document from `reader` on a thread of its own and hands every piece to `each` on
/// this one, in order. Returns what the tokenizer accepted, or its error after every piece
/// before it; an error of `each` stops the reading.
pub fn pieces<R: Read + Send, E: From<TokError>>(
    reader: R,
    mut each: impl FnMut(Piece<'_>) -> Result<(), E>,
) -> Result<Leniency, E> {
    let (tx, rx) = sync_channel(AHEAD);
    let (spent_tx, spent_rx): (Sender<Batch>, _) = channel();
    std::thread::scope(|scope| {
        let builder = std::thread::Builder::new().name("chrome read-ahead".into());
        let (_, mut held) = apart::spawn_scoped(scope, builder, move |held| {
            read_ahead(reader, tx, spent_rx, held)
        })
        .map_err(TokError::Io)?;
        // `rx` is dropped when this returns, so a reader still running stops at its next send
        let rx = rx;
        loop {
            let msg = rx.recv();
            held.check();
            match msg {
                Ok(Msg::Batch(mut batch)) => {
                    batch.each(&mut each)?;
                    batch.clear();
                    let _ = spent_tx.send(batch);
                }
                Ok(Msg::Done(leniency)) => return Ok(leniency),
                Ok(Msg::Failed(e)) => return Err(e.into()),
                // the reader only hangs up after Done or Failed, or by panicking, which the
                // scope passes on
                Err(_) => return Ok(Leniency::default()),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every piece of `doc` as text (`E`/`S`: event read by the fast path or left to serde;
    /// `M`: meta), and how reading ended.
    fn read(doc: &[u8], stop_at: Option<u64>) -> (Vec<String>, Result<Leniency, String>) {
        let mut seen = Vec::new();
        let end = pieces(doc, |piece| -> Result<(), String> {
            match piece {
                Piece::Event {
                    bytes,
                    index,
                    parsed,
                    ..
                } => {
                    if Some(index) == stop_at {
                        return Err(format!("stopped at {index}"));
                    }
                    let how = if parsed.is_some() { 'E' } else { 'S' };
                    seen.push(format!("{how}{index}:{}", String::from_utf8_lossy(bytes)));
                }
                Piece::Meta { key, raw, .. } => {
                    seen.push(format!("M{key}={}", String::from_utf8_lossy(raw)))
                }
            }
            Ok(())
        });
        let end = end.map_err(|e| e.to_string());
        (seen, end)
    }

    impl From<TokError> for String {
        fn from(e: TokError) -> String {
            match e {
                TokError::Io(e) => e.to_string(),
                TokError::Syntax(e) => format!("{} at {}", e.message, e.offset),
            }
        }
    }

    #[test]
    fn pieces_come_in_input_order_across_batches() {
        let n = 20_000; // several batches of BATCH_BYTES
        let mut doc = String::from(r#"{"a":1,"traceEvents":["#);
        for i in 0..n {
            if i > 0 {
                doc.push(',');
            }
            if i % 1000 == 7 {
                doc.push_str(r#"{"name":"esc\"aped","ph":"i","ts":1}"#);
            } else {
                doc.push_str(&format!(r#"{{"name":"e{i}","ph":"X","ts":{i},"dur":1}}"#));
            }
        }
        doc.push_str(r#"],"b":[2]}"#);
        let (seen, end) = read(doc.as_bytes(), None);
        assert!(end.is_ok());
        assert_eq!(seen.len(), n + 2);
        assert_eq!(seen[0], "Ma=1");
        assert_eq!(seen[1], r#"E0:{"name":"e0","ph":"X","ts":0,"dur":1}"#);
        assert_eq!(seen[8], r#"S7:{"name":"esc\"aped","ph":"i","ts":1}"#);
        assert_eq!(seen[n + 1], "Mb=[2]");
        for (i, s) in seen[1..=n].iter().enumerate() {
            assert!(s[1..].starts_with(&format!("{i}:")), "{s} out of order");
        }
    }

    #[test]
    fn an_event_laid_out_but_not_utf8_goes_to_serde() {
        let doc = b"[{\"name\":\"a\xff\",\"ph\":\"i\",\"ts\":1},{\"name\":\"b\",\"ph\":\"X\",\"ts\":2.5,\"args\":{\"k\":3}}]";
        let mut seen = Vec::new();
        let end = pieces(&doc[..], |piece| -> Result<(), String> {
            if let Piece::Event { index, parsed, .. } = piece {
                // the second event's fields, read after the first one's were dropped
                let fields = parsed.map(|e| {
                    let members = e.members.0.map(|m| m.len());
                    (
                        e.name.clone().map(|n| n.0.into_owned()),
                        e.times.ts,
                        members,
                    )
                });
                seen.push((index, fields));
            }
            Ok(())
        });
        assert!(end.is_ok());
        let ts = tracex_ir::time::Decimal {
            value: 2500,
            rounded: false,
        };
        assert_eq!(
            seen,
            vec![
                (0, None),
                (1, Some((Some("b".to_string()), Some(ts), Some(1))))
            ]
        );
    }

    #[test]
    fn a_syntax_error_comes_after_every_piece_before_it() {
        let (seen, end) = read(br#"[{"ph":"B"},{"ph":"E"} {"ph":"X"}]"#, None);
        assert_eq!(seen.len(), 2);
        assert!(end.unwrap_err().contains("between events"));
    }

    #[test]
    fn an_error_of_the_caller_stops_the_reading() {
        let mut doc = String::from("[");
        for i in 0..100_000 {
            doc.push_str(&format!(r#"{{"ph":"i","ts":{i}}},"#));
        }
        doc.push(']');
        let (seen, end) = read(doc.as_bytes(), Some(10));
        assert_eq!(seen.len(), 10);
        assert_eq!(end.unwrap_err(), "stopped at 10");
    }
}
