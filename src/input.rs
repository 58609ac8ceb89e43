//! Opening inputs: a path or `-` for stdin, gzip recognised by its magic bytes and read with a
//! multi-member decoder, a decompressed head kept for sniffing and replayed to the importer.

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use flate2::read::MultiGzDecoder;
use tracex_ir::format::Source;
use tracex_ir::io::READ_SIZE;
use tracex_ir::{Probe, Progress};

const HEAD: usize = 64 << 10;
const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// Counts bytes read from the underlying file into the progress counter.
struct Counting<R> {
    inner: R,
    progress: Arc<Progress>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.advance(n as u64);
        Ok(n)
    }
}

pub struct Input {
    /// As given on the command line.
    pub display: String,
    pub path: Option<PathBuf>,
    pub is_dir: bool,
    pub compressed: bool,
    pub head: Vec<u8>,
    reader: Option<Box<dyn Read + Send>>,
    /// Keeps the temporary copy made by `file_path` alive.
    spool: Option<tempfile::NamedTempFile>,
    /// Keeps the SQLite export of an Nsight Systems report alive.
    _export: Option<crate::nsys_rep::Exported>,
    pub progress: Arc<Progress>,
}

impl Input {
    pub fn open(arg: &str) -> anyhow::Result<Input> {
        if crate::nsys_rep::is_report(arg) {
            let exported = crate::nsys_rep::export(arg)?;
            let mut input = Input::open(&exported.sqlite.to_string_lossy())?;
            input.display = arg.to_string();
            input._export = Some(exported);
            return Ok(input);
        }
        let progress = Arc::new(Progress::new());
        let (path, mut raw): (Option<PathBuf>, Box<dyn Read + Send>) = if arg == "-" {
            (None, Box::new(io::stdin()))
        } else {
            let p = PathBuf::from(arg);
            let meta = std::fs::metadata(&p).with_context(|| format!("cannot open {arg}"))?;
            refuse_special(arg, &meta)?;
            if meta.is_dir() {
                return Ok(Input {
                    display: arg.to_string(),
                    path: Some(p),
                    is_dir: true,
                    compressed: false,
                    head: Vec::new(),
                    reader: None,
                    spool: None,
                    _export: None,
                    progress,
                });
            }
            progress.set_total(meta.len());
            let f = File::open(&p).with_context(|| format!("cannot open {arg}"))?;
            (Some(p), Box::new(f))
        };
        // The first bytes come straight from the file, so that sniffing reads 64 KiB where a
        // first fill of the buffer below read (and faulted in) all of it on the main thread,
        // for each input, before any import began.
        let first = read_head(&mut raw, arg)?;
        progress.advance(first.len() as u64);
        // Counted above the buffer: a `BufReader` over a reader of its own zero-fills its
        // buffer first (`Counting` cannot take uninitialised memory), page faults for all of it
        // per input, while over the file it reads into the buffer as it is. The readers ask
        // for at least its capacity, which it then hands to the file.
        let buffered = Counting {
            inner: BufReader::with_capacity(READ_SIZE, raw),
            progress: progress.clone(),
        };
        let compressed = first.starts_with(&[0x1f, 0x8b]);
        let (mut head, stream): (Vec<u8>, Box<dyn Read + Send>) = if compressed {
            let mut stream = BufReader::with_capacity(
                READ_SIZE,
                MultiGzDecoder::new(Cursor::new(first).chain(buffered)),
            );
            (read_head(&mut stream, arg)?, Box::new(stream))
        } else {
            (first, Box::new(buffered))
        };
        // A UTF-8 byte order mark (Windows tools write one) is no part of any format's text.
        if head.starts_with(UTF8_BOM) {
            head.drain(..UTF8_BOM.len());
        }
        let reader: Box<dyn Read + Send> = Box::new(Cursor::new(head.clone()).chain(stream));
        Ok(Input {
            display: arg.to_string(),
            path,
            is_dir: false,
            compressed,
            head,
            reader: Some(reader),
            spool: None,
            _export: None,
            progress,
        })
    }

    pub fn probe(&self) -> Probe<'_> {
        Probe {
            path: self.path.as_deref(),
            head: &self.head,
            compressed: self.compressed,
            is_dir: self.is_dir,
        }
    }

    /// The whole (decompressed) input as a stream; only once.
    pub fn take_reader(&mut self) -> io::Result<Box<dyn Read + Send>> {
        self.reader
            .take()
            .ok_or_else(|| io::Error::other("input already read"))
    }

    /// A path to the input as a plain file: the input itself, or a temporary copy for stdin and
    /// compressed input.
    pub fn file_path(&mut self) -> io::Result<PathBuf> {
        if let (Some(p), false) = (&self.path, self.compressed) {
            return Ok(p.clone());
        }
        if let Some(s) = &self.spool {
            return Ok(s.path().to_path_buf());
        }
        let mut r = self.take_reader()?;
        let mut tmp = tempfile::NamedTempFile::new()
            .map_err(|e| tracex_ir::io::temp_file_error(e, "to read this input as a plain file"))?;
        io::copy(&mut r, tmp.as_file_mut())?;
        let p = tmp.path().to_path_buf();
        self.spool = Some(tmp);
        Ok(p)
    }
}

impl Source for Input {
    fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
    fn compressed(&self) -> bool {
        self.compressed
    }
    fn reader(&mut self) -> io::Result<Box<dyn Read + Send>> {
        self.take_reader()
    }
    fn file(&mut self) -> io::Result<PathBuf> {
        self.file_path()
    }
}

/// Sockets and devices are refused at once: reading one would block or never end (a FIFO is
/// read like `cat` reads it, and blocks until a writer comes).
fn refuse_special(arg: &str, meta: &std::fs::Metadata) -> anyhow::Result<()> {
    let t = meta.file_type();
    if t.is_file() || t.is_dir() {
        return Ok(());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let what = if t.is_fifo() {
            return Ok(());
        } else if t.is_socket() {
            "a socket"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_char_device() {
            "a character device"
        } else {
            "not a regular file"
        };
        bail!("{arg}: {what}, not a trace file (give a regular file, a directory, a FIFO or - for stdin)");
    }
    #[allow(unreachable_code)]
    Ok(())
}

/// The first [`HEAD`] bytes of `r` (fewer at its end): what the sniffers see.
fn read_head(r: &mut dyn Read, arg: &str) -> anyhow::Result<Vec<u8>> {
    let mut head = vec![0u8; HEAD];
    let n = read_up_to(r, &mut head).with_context(|| format!("cannot read {arg}"))?;
    head.truncate(n);
    Ok(head)
}

fn read_up_to(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Whether two paths name the same file (so an output never overwrites an input).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Text of `n` bytes that differs along its length, so that a byte out of place shows.
    fn text(n: usize) -> Vec<u8> {
        (0..n).map(|i| b'a' + (i * 7 % 26) as u8).collect()
    }

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_string_lossy().into_owned()
    }

    /// The head an importer's sniffer sees, the whole stream it reads, and the bytes counted.
    fn open(path: &str) -> (Vec<u8>, Vec<u8>, bool, u64) {
        let mut input = Input::open(path).unwrap();
        let mut all = Vec::new();
        input.take_reader().unwrap().read_to_end(&mut all).unwrap();
        (
            input.head.clone(),
            all,
            input.compressed,
            input.progress.done(),
        )
    }

    #[test]
    fn the_head_and_the_stream_are_the_file_at_every_size_around_the_head() {
        let dir = tempfile::tempdir().unwrap();
        for n in [
            0,
            1,
            2,
            3,
            HEAD - 1,
            HEAD,
            HEAD + 1,
            3 * HEAD + 17,
            (1 << 20) + 5,
        ] {
            let bytes = text(n);
            let (head, all, compressed, counted) = open(&write(dir.path(), "t.txt", &bytes));
            assert!(!compressed);
            assert_eq!(head, &bytes[..n.min(HEAD)], "head of {n} bytes");
            assert_eq!(all, bytes, "stream of {n} bytes");
            assert_eq!(counted, n as u64, "progress of {n} bytes");
        }
    }

    #[test]
    fn gzip_members_are_read_one_after_the_other_and_sniffed_decompressed() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = text(5 * HEAD + 3);
        let (a, b) = bytes.split_at(HEAD / 2);
        let mut gz = Vec::new();
        for part in [a, b] {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(part).unwrap();
            gz.extend(e.finish().unwrap());
        }
        let (head, all, compressed, counted) = open(&write(dir.path(), "t.gz", &gz));
        assert!(compressed);
        assert_eq!(head, &bytes[..HEAD]);
        assert_eq!(all, bytes);
        assert_eq!(counted, gz.len() as u64, "progress counts the file's bytes");
    }

    #[test]
    fn a_byte_order_mark_is_dropped_from_the_head_and_the_stream() {
        let dir = tempfile::tempdir().unwrap();
        let body = text(2 * HEAD);
        let (head, all, _, _) = open(&write(dir.path(), "b.json", &[UTF8_BOM, &body].concat()));
        assert_eq!(head, &body[..HEAD - UTF8_BOM.len()]);
        assert_eq!(all, body);
    }
}
