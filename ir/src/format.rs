//! What a format crate tells the program about itself: one [`Format`] descriptor with its names,
//! how to recognise its files, how to read and write them, and the diagnostics it counts. The
//! program's registry is a list of these; nothing about a format lives outside its crate but
//! the command-line flags that set its options.

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use crate::diag::DiagKind;
use crate::error::Result;
use crate::io::OutputTarget;
use crate::sink::{EventOrder, ImportCtx, Sink};
use crate::sniff::{Confidence, Probe};

/// A trace format.
pub struct Format {
    /// The name `--from` / `--to` and `tracex formats` use.
    pub name: &'static str,
    /// Other names accepted by `--from` / `--to`; unique across formats.
    pub aliases: &'static [&'static str],
    /// One line for `tracex formats`.
    pub description: &'static str,
    /// File name endings that suggest the format (lower case); content sniffing decides. The
    /// first is the one a batch conversion gives its outputs.
    pub extensions: &'static [&'static str],
    /// How sure the format is that a probed input is one of its files.
    pub sniff: fn(&Probe) -> Confidence,
    /// The format this one is a more specific reading of (CUPTI's Chrome JSON is Chrome JSON):
    /// when both sniff an input equally sure, the refining format wins.
    pub refines: Option<&'static str>,
    /// Every diagnostic the crate can count (for `tracex formats --diagnostics` and the docs).
    pub diagnostics: &'static [&'static DiagKind],
    pub import: Option<Import>,
    pub export: Option<Export>,
}

/// How a format is read.
pub struct Import {
    /// The order in which the importer pushes events (`Unsorted` puts a sorter in front).
    pub order: EventOrder,
    pub input: InputKind,
    /// Reads `source` into `ctx` with the crate's import options from `options`.
    pub run: ImportFn,
    /// `--activity` words this format understands beyond the ones every format does (nsys
    /// table names).
    pub activities: &'static [&'static str],
    /// Lets the importer select `--activity` kinds itself, reading only what is asked for
    /// (nsys tables); sets the crate's import options in `options` or says what is wrong with
    /// the words. Without it the filter selects after import.
    pub select_activity: Option<SelectActivityFn>,
}

pub type ImportFn = fn(&mut dyn Source, &Options, &mut ImportCtx) -> Result<()>;
pub type SelectActivityFn = fn(&[String], &mut Options) -> std::result::Result<(), String>;
pub type ExportFn = fn(&OutputTarget, &Options) -> Result<ExportSink>;

/// An exporter, as its format makes it.
pub enum ExportSink {
    /// One whose state may move to another thread: a conversion runs it on a thread of its own
    /// ([`crate::threaded`]), so that it formats and writes while the importer reads.
    Movable(Box<dyn Sink + Send>),
    /// One that must stay on the thread that made it (libotf2's writers).
    Bound(Box<dyn Sink>),
}

impl ExportSink {
    pub fn sink(&mut self) -> &mut dyn Sink {
        match self {
            ExportSink::Movable(s) => &mut **s,
            ExportSink::Bound(s) => &mut **s,
        }
    }
}

/// How a format is written.
pub struct Export {
    /// An exporter writing to `target` with the crate's export options from `options`.
    pub create: ExportFn,
    /// The paths an output at a path occupies (several for an OTF2 archive), so that none of
    /// them is overwritten unasked or is an input.
    pub paths: fn(&Path) -> Vec<PathBuf>,
}

/// [`Export::paths`] of a format written as one file.
pub fn one_file(path: &Path) -> Vec<PathBuf> {
    vec![path.to_path_buf()]
}

/// How an importer reads its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A byte stream (decompressed transparently): [`Source::reader`]; stdin works.
    Stream,
    /// A file on disk (SQLite, archives): [`Source::file`]; stdin and compressed input are
    /// copied to a temporary file first.
    File,
}

/// An opened input, as an importer reads it.
pub trait Source {
    /// The path as given; `None` for standard input.
    fn path(&self) -> Option<&Path>;
    /// Whether the input is gzip-compressed ([`Source::reader`] decompresses it).
    fn compressed(&self) -> bool;
    /// The whole decompressed input as a stream; only once.
    fn reader(&mut self) -> io::Result<Box<dyn Read + Send>>;
    /// A path to the decompressed input as a plain file: the input itself, or a temporary copy
    /// for stdin and compressed input.
    fn file(&mut self) -> io::Result<PathBuf>;
}

/// The options of every format for one run, each crate's under its own types (its
/// `ImportOptions` and `ExportOptions`). The command line sets them; a format's descriptor reads
/// its own; a type never set reads as its default.
#[derive(Default)]
pub struct Options {
    map: FxHashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

impl Options {
    /// The options of type `T`, or their default.
    pub fn get<T: Any + Clone + Default>(&self) -> Cow<'_, T> {
        match self.map.get(&TypeId::of::<T>()) {
            Some(v) => Cow::Borrowed(v.downcast_ref::<T>().expect("keyed by type")),
            None => Cow::Owned(T::default()),
        }
    }

    /// The options of type `T` to change, set to their default on first use.
    pub fn get_mut<T: Any + Default + Send + Sync>(&mut self) -> &mut T {
        self.map
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(T::default()))
            .downcast_mut::<T>()
            .expect("keyed by type")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, Default, PartialEq)]
    struct A {
        level: u32,
    }
    #[derive(Clone, Debug, Default, PartialEq)]
    struct B(String);

    #[test]
    fn options_by_type() {
        let mut o = Options::default();
        assert_eq!(o.get::<A>().level, 0);
        o.get_mut::<A>().level = 3;
        o.get_mut::<B>().0.push('x');
        assert_eq!(*o.get::<A>(), A { level: 3 });
        assert_eq!(o.get::<B>().0, "x");
        assert!(matches!(o.get::<A>(), Cow::Borrowed(_)));
    }
}
