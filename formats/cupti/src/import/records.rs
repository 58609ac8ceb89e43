//! The records of CUPTI text, read and parsed ahead: a thread of its own reads the lines, groups
//! each record line with its continuation lines, and parses them (everything that needs no
//! definitions); the importing thread gets the records and the lines it skips, in order, and
//! turns them into events. Reading and parsing were three quarters of that thread's time in a
//! GPU merge of a million launches from CUPTI text, on one core.

use std::borrow::Cow;
use std::io::{self, Read};
use std::ops::Range;

use tracex_ir::ahead::{self, Handoff, Msg};
use tracex_ir::io::LineReader;
use tracex_ir::DiagKind;

use super::record::{self, Field, Record};
use crate::diag as d;

/// A line that is no record, or a record, in input order.
pub enum Item {
    /// A line skipped, with the diagnostic it gets.
    Skipped(&'static DiagKind, u64),
    /// A record and its continuation lines, from its first line: parsed, or what is wrong.
    Record {
        line: u64,
        parsed: Result<Parsed, String>,
    },
}

/// A parsed record, its parts as ranges of its batch ([`Parsed::record`]).
pub struct Parsed {
    kind: Range<usize>,
    label: Option<Range<usize>>,
    times: Range<usize>,
    /// The texts the fields are split from: the first line's after the times, and the
    /// continuation lines'.
    rest: [Range<usize>; 2],
    fields: Range<usize>,
}

/// Records read ahead: their texts back to back, their times and fields.
#[derive(Default)]
pub struct Batch {
    text: String,
    times: Vec<i64>,
    fields: Vec<(Range<usize>, Range<usize>)>,
    items: Vec<Item>,
    /// Whether the records' fields are split yet.
    split: bool,
}

impl ahead::Batch for Batch {
    fn clear(&mut self) {
        self.text.clear();
        self.times.clear();
        self.fields.clear();
        self.items.clear();
        self.split = false;
    }

    fn reserve_like(&mut self, like: &Batch, bytes: usize, target: usize) {
        let scale = (bytes, target);
        ahead::room_text(&mut self.text, like.text.len(), scale);
        ahead::room(&mut self.times, like.times.len(), scale);
        ahead::room(&mut self.fields, like.fields.len(), scale);
        ahead::room(&mut self.items, like.items.len(), scale);
    }
}

impl Parsed {
    /// The record, its texts in `batch` and its fields in `fields` ([`Batch::fields`]).
    pub fn record<'a>(&self, batch: &'a Batch, fields: &'a [Field<'a>]) -> Record<'a> {
        let text = |r: &Range<usize>| &batch.text[r.clone()];
        Record {
            kind: text(&self.kind),
            label: self.label.as_ref().map(text),
            times: Cow::Borrowed(&batch.times[self.times.clone()]),
            fields: Cow::Borrowed(&fields[self.fields.clone()]),
        }
    }
}

impl Batch {
    /// The fields of every record of the batch, made once for the batch: making them for each
    /// record (a vector each) was a twentieth of the importing thread.
    pub fn fields(&self) -> Vec<Field<'_>> {
        (self.fields.iter())
            .map(|(k, v)| Field {
                key: &self.text[k.clone()],
                value: &self.text[v.clone()],
            })
            .collect()
    }

    /// Splits the fields of the records whose fields are not split yet.
    fn split_fields(&mut self) {
        if self.split {
            return;
        }
        self.split = true;
        for item in &mut self.items {
            if let Item::Record { parsed: Ok(p), .. } = item {
                p.fields = split_fields(&self.text, &p.rest, &mut self.fields);
            }
        }
    }

    /// Parses a record (its first line and its continuation lines, each followed by a comma)
    /// into the batch.
    fn push_record(&mut self, line: u64, head: &str, more: &str) {
        let Batch {
            text,
            times,
            fields,
            items,
            split,
        } = self;
        let start = text.len();
        text.push_str(head);
        text.push_str(more);
        let (head, more) = text[start..].split_at(head.len());
        let at = |part: &str| ahead::span(text, part);
        let (t, f) = (times.len(), fields.len());
        let parsed = match record::parse_head(head, times) {
            Ok((kind, label, rest)) => {
                let rest = [at(rest), at(more)];
                let fields = match *split {
                    true => split_fields(text, &rest, fields),
                    false => f..f,
                };
                Ok(Parsed {
                    kind: at(kind),
                    label: label.map(at),
                    times: t..times.len(),
                    rest,
                    fields,
                })
            }
            Err(why) => {
                times.truncate(t);
                Err(why)
            }
        };
        items.push(Item::Record { line, parsed });
    }
}

/// Splits the fields of `rest` (ranges of `text`) into `fields`; gives their range there.
fn split_fields(
    text: &str,
    rest: &[Range<usize>; 2],
    fields: &mut Vec<(Range<usize>, Range<usize>)>,
) -> Range<usize> {
    let f = fields.len();
    let at = |part: &str| ahead::span(text, part);
    for part in rest {
        record::for_each_field(&text[part.clone()], |x| {
            fields.push((at(x.key), at(x.value)))
        });
    }
    f..fields.len()
}

/// The record being read: its line and first line, and its continuation lines, each followed
/// by a comma, until the next line that is not one. The texts are kept from one record to the
/// next, so that reading a record allocates nothing.
#[derive(Default)]
struct Pending {
    line: Option<u64>,
    head: String,
    more: String,
}

impl Pending {
    /// Starts reading the record whose first line is `head`, line `no`.
    fn start(&mut self, no: u64, head: &str) {
        self.line = Some(no);
        self.head.clear();
        self.head.push_str(head);
        self.more.clear();
    }

    /// Parses the record being read, if any, into `batch`.
    fn flush(&mut self, batch: &mut Batch) {
        if let Some(line) = self.line.take() {
            batch.push_record(line, &self.head, &self.more);
        }
    }
}

/// The reader thread: fills batches until the input ends, a read fails, or the importer hangs
/// up.
fn read<R: Read>(reader: R, out: &mut Handoff<Msg<Batch>, Batch>) {
    let mut lines = LineReader::new(reader);
    let mut batch = Batch::default();
    let mut pending = Pending::default();
    loop {
        if batch.items.is_empty() {
            // a new batch: its fields are split here only while the importing thread is behind
            batch.split = out.behind();
        }
        let (no, bytes) = match lines.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => {
                pending.flush(&mut batch);
                return out.last(Msg::Batch(batch));
            }
            Err(e) => {
                // the record being read is not handed on, as it would not be read whole
                out.last(Msg::Batch(batch));
                return out.last(Msg::Failed(e));
            }
        };
        let skipped = match std::str::from_utf8(bytes) {
            Err(_) => Some(&d::NOT_TEXT),
            Ok(line) if line.trim().is_empty() => Some(&d::BLANK_LINE),
            Ok(line) if line.starts_with([' ', '\t']) => {
                match pending.line {
                    Some(_) => {
                        pending.more.push_str(line);
                        pending.more.push(',');
                    }
                    None => batch.items.push(Item::Skipped(&d::ORPHAN_CONTINUATION, no)),
                }
                continue;
            }
            Ok(line) if record::looks_like_record(line) => {
                pending.flush(&mut batch);
                pending.start(no, line);
                None
            }
            Ok(_) => Some(&d::LOG_LINE),
        };
        if let Some(kind) = skipped {
            // a line that is not a continuation ends the record before it
            pending.flush(&mut batch);
            batch.items.push(Item::Skipped(kind, no));
        }
        // skipped lines hold no text, but take room
        let bytes = batch.text.len() + batch.items.len() * std::mem::size_of::<Item>();
        if !out.offer(&mut batch, bytes, Msg::Batch) {
            return;
        }
    }
}

/// Reads and parses the records of `reader` on a thread of its own and hands each item to
/// `each` on this one, in order, with its batch and the batch's fields. A read error comes
/// after every item before it; an error of `each` stops the reading.
pub fn records<R: Read + Send, E: From<io::Error>>(
    reader: R,
    mut each: impl FnMut(&Item, &Batch, &[Field]) -> Result<(), E>,
) -> Result<(), E> {
    ahead::read_ahead(
        "cupti read-ahead",
        (ahead::FIRST_BATCH, ahead::BATCH_BYTES),
        |out| read(reader, out),
        |batch: &mut Batch| {
            batch.split_fields();
            let fields = batch.fields();
            for item in &batch.items {
                each(item, batch, &fields)?;
            }
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each item as text: a skipped line's diagnostic, or a record as parsed (its `Debug`).
    fn shown(item: &Item, batch: &Batch, fields: &[Field]) -> String {
        match item {
            Item::Skipped(kind, no) => format!("{no} {}", kind.name),
            Item::Record { line, parsed } => match parsed {
                Ok(p) => format!("{line} {:?}", p.record(batch, fields)),
                Err(why) => format!("{line} bad {why}"),
            },
        }
    }

    #[test]
    fn fields_split_by_the_reader_or_the_importing_thread_are_the_same() {
        let records = [
            (
                "CONCURRENT_KERNEL [ 5, 9 ] duration 4, \"k<1, 2>(float*)\", correlationId 3",
                "\tgrid [ 1, 1, 1 ], block [ 32, 1, 1 ],\tdeviceId 0, streamId 7,",
            ),
            ("MEMCPY \"HtoD\" [ 1, 2 ] duration 1, size 4096", ""),
            ("RUNTIME [ 1, x ] duration 1", "\tthreadId 3,"),
            (
                "MEMORY2 [ 8 ] memoryOperationType ALLOCATE, name \"a, b\"",
                "\tdeviceId (0, 1),",
            ),
        ];
        let shown_all = |split: bool| {
            let mut batch = Batch {
                split,
                ..Batch::default()
            };
            for (i, (head, more)) in records.iter().enumerate() {
                batch.push_record(i as u64, head, more);
            }
            batch.split_fields();
            let fields = batch.fields();
            (batch.items.iter())
                .map(|item| shown(item, &batch, &fields))
                .collect::<Vec<_>>()
        };
        let by_reader = shown_all(true);
        assert_eq!(by_reader, shown_all(false));
        assert!(by_reader[0].contains("key: \"streamId\", value: \"7\""));
        assert!(by_reader[2].contains("bad"));
        assert!(by_reader[3].contains("key: \"deviceId\", value: \"(0, 1)\""));
    }

    #[test]
    fn records_read_ahead_are_every_record_and_skipped_line_in_order() {
        // records of every shape with continuation lines, between log lines, blank lines,
        // bytes that are not text, orphan continuations and bad records: many batches
        let mut text = Vec::new();
        let mut want = Vec::new();
        let mut no = 0u64;
        let mut line = |text: &mut Vec<u8>, l: &[u8]| {
            text.extend_from_slice(l);
            text.push(b'\n');
            no += 1;
            no
        };
        for i in 0..30_000u64 {
            match i % 7 {
                0 => {
                    let n = line(&mut text, b"Enabling CUPTI_ACTIVITY_KIND_RUNTIME.");
                    want.push(format!("{n} cupti_log_line"));
                }
                1 => {
                    let n = line(&mut text, b"  \t");
                    want.push(format!("{n} cupti_blank_line"));
                    let n = line(&mut text, b"\tdeviceId 0, streamId 7");
                    want.push(format!("{n} cupti_orphan_continuation"));
                }
                2 => {
                    let n = line(&mut text, b"\xff\xfe");
                    want.push(format!("{n} cupti_not_text"));
                }
                3 => {
                    let head = format!("RUNTIME [ {i}, x ] duration 1");
                    let n = line(&mut text, head.as_bytes());
                    want.push(format!("{n} bad {}", record::parse(&head).unwrap_err()));
                }
                _ => {
                    let head = format!(
                        "CONCURRENT_KERNEL [ {i}, {} ] duration 9, \"k<{i}, 2>(float*)\", correlationId {i}",
                        i + 9
                    );
                    let more = format!("\tgrid [ {i}, 1, 1 ], block [ 32, 1, 1 ]");
                    let n = line(&mut text, head.as_bytes());
                    line(&mut text, more.as_bytes());
                    let more = format!("{more},");
                    let mut rec = record::parse(&head).unwrap();
                    record::push_fields(&more, rec.fields.to_mut());
                    want.push(format!("{n} {rec:?}"));
                }
            }
        }
        let mut got = Vec::new();
        records(&text[..], |item, batch, fields| {
            got.push(shown(item, batch, fields));
            Ok::<(), io::Error>(())
        })
        .unwrap();
        if let Some(i) = (0..want.len()).find(|&i| got.get(i) != want.get(i)) {
            panic!(
                "item {i}: {:?} read ahead, {} expected",
                got.get(i),
                want[i]
            );
        }
        assert_eq!(got.len(), want.len());
    }
}
