//! The output file, written (and gzip-compressed) on a background thread so that formatting
//! events and writing bytes use both cores.

use std::io::{self, Write};

use flate2::write::GzEncoder;
use tracex_ir::io::{BackgroundWriter, OutFile, OutputTarget};
use tracex_ir::Result;

use crate::options::ExportOptions;

pub enum Out {
    Plain(BackgroundWriter<OutFile>),
    Gz(BackgroundWriter<GzEncoder<OutFile>>),
}

impl Out {
    pub fn create(target: &OutputTarget, opts: &ExportOptions) -> Result<Out> {
        let file = OutFile::create(target)?;
        let gzip = opts.gzip.unwrap_or_else(|| target.has_suffix(".gz"));
        Ok(if gzip {
            Out::Gz(BackgroundWriter::new(GzEncoder::new(
                file,
                flate2::Compression::new(opts.gzip_level.min(9)),
            )))
        } else {
            Out::Plain(BackgroundWriter::new(file))
        })
    }

    /// Writes `buf` and leaves it empty, handing it over without a copy where it can.
    pub fn hand_over(&mut self, buf: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Out::Plain(w) => w.hand_over(buf),
            Out::Gz(w) => w.hand_over(buf),
        }
    }

    pub fn commit(self) -> io::Result<()> {
        match self {
            Out::Plain(w) => w.finish()?.commit(),
            Out::Gz(w) => w.finish()?.finish()?.commit(),
        }
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Out::Plain(w) => w.write(buf),
            Out::Gz(w) => w.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Out::Plain(w) => w.write_all(buf),
            Out::Gz(w) => w.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Plain(w) => w.flush(),
            Out::Gz(w) => w.flush(),
        }
    }
}
