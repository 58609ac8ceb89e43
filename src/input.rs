//! Opening inputs: a path or `-` for stdin, gzip recognised by its magic bytes and read with a
//! multi-member decoder, a decompressed head kept for sniffing and replayed to the importer.

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use flate2::read::MultiGzDecoder;
use tracex_ir::{Confidence, Probe, Progress};

use crate::formats::{self, Format};

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
    reader: Option<Box<dyn Read>>,
    /// Keeps the temporary copy made by `file_path` alive.
    spool: Option<tempfile::NamedTempFile>,
    pub progress: Arc<Progress>,
}

impl Input {
    pub fn open(arg: &str) -> anyhow::Result<Input> {
        let progress = Arc::new(Progress::new());
        let (path, raw): (Option<PathBuf>, Box<dyn Read>) = if arg == "-" {
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
                    progress,
                });
            }
            progress.set_total(meta.len());
            let f = File::open(&p).with_context(|| format!("cannot open {arg}"))?;
            (Some(p), Box::new(f))
        };
        let counted = Counting {
            inner: raw,
            progress: progress.clone(),
        };
        let mut buffered = BufReader::with_capacity(1 << 20, counted);
        let mut magic = [0u8; 2];
        let got = read_up_to(&mut buffered, &mut magic)?;
        let prefix = Cursor::new(magic[..got].to_vec());
        let compressed = got == 2 && magic == [0x1f, 0x8b];
        let mut stream: Box<dyn Read> = if compressed {
            Box::new(BufReader::with_capacity(
                1 << 20,
                MultiGzDecoder::new(prefix.chain(buffered)),
            ))
        } else {
            Box::new(prefix.chain(buffered))
        };
        let mut head = vec![0u8; HEAD];
        let n = read_up_to(&mut stream, &mut head).with_context(|| format!("cannot read {arg}"))?;
        head.truncate(n);
        // A UTF-8 byte order mark (Windows tools write one) is no part of any format's text.
        if head.starts_with(UTF8_BOM) {
            head.drain(..UTF8_BOM.len());
        }
        let reader: Box<dyn Read> = Box::new(Cursor::new(head.clone()).chain(stream));
        Ok(Input {
            display: arg.to_string(),
            path,
            is_dir: false,
            compressed,
            head,
            reader: Some(reader),
            spool: None,
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
    pub fn take_reader(&mut self) -> io::Result<Box<dyn Read>> {
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
        let mut tmp = tempfile::NamedTempFile::new()?;
        io::copy(&mut r, tmp.as_file_mut())?;
        let p = tmp.path().to_path_buf();
        self.spool = Some(tmp);
        Ok(p)
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

/// Every importer's answer for an input, best first.
pub fn sniff_all(input: &Input) -> Vec<(&'static Format, Confidence)> {
    let probe = input.probe();
    let mut v: Vec<_> = formats::formats()
        .filter(|f| f.import.is_some())
        .map(|f| (f, (f.sniff)(&probe)))
        .collect();
    v.sort_by_key(|a| std::cmp::Reverse(a.1));
    v
}

/// Picks the input format: `--from`, else the most confident sniffer (the file extension
/// breaks ties); no match or an unresolved tie is an error that lists what was tried.
pub fn resolve_format(input: &Input, from: Option<&str>) -> anyhow::Result<&'static Format> {
    if let Some(name) = from {
        let Some(f) = formats::by_name(name) else {
            bail!("unknown input format {name:?} (see `tracex formats`)");
        };
        if f.import.is_none() {
            bail!("tracex cannot read {name} files");
        }
        return Ok(f);
    }
    let answers = sniff_all(input);
    let tried = answers
        .iter()
        .map(|(f, c)| format!("{}: {}", f.name, describe(*c)))
        .collect::<Vec<_>>()
        .join(", ");
    let best = answers.first().map(|a| a.1).unwrap_or(Confidence::No);
    if best == Confidence::No {
        let what = if input.head.is_empty() && !input.is_dir {
            "the input is empty".to_string()
        } else {
            "no format recognised its content".to_string()
        };
        bail!(
            "{}: {what} (tried {tried}); use --from to force a format",
            input.display
        );
    }
    let top: Vec<_> = answers.iter().filter(|a| a.1 == best).collect();
    if top.len() == 1 {
        return Ok(top[0].0);
    }
    if let Some(f) = refining_winner(top.iter().map(|a| a.0)) {
        return Ok(f);
    }
    let probe = input.probe();
    let by_ext: Vec<_> = top
        .iter()
        .filter(|(f, _)| probe.has_extension(f.extensions))
        .collect();
    if by_ext.len() == 1 {
        return Ok(by_ext[0].0);
    }
    bail!(
        "{}: ambiguous input, several formats match equally ({tried}); use --from",
        input.display
    )
}

/// Among formats that sniffed an input equally sure, the one that refines all the others
/// (CUPTI's Chrome JSON is Chrome JSON with more meaning: `cupti` refines `chrome`), if exactly
/// one does. A refinement is the more specific reading of the same bytes, so it wins the tie.
fn refining_winner(tied: impl Iterator<Item = &'static Format> + Clone) -> Option<&'static Format> {
    let mut winners = tied.clone().filter(|f| {
        tied.clone()
            .all(|o| o.name == f.name || f.refines == Some(o.name))
    });
    let w = winners.next()?;
    winners.next().is_none().then_some(w)
}

pub fn describe(c: Confidence) -> String {
    match c {
        Confidence::No => "no".into(),
        Confidence::Maybe(n) => format!("maybe ({n}%)"),
        Confidence::Certain => "certain".into(),
    }
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

    fn format(name: &'static str, refines: Option<&'static str>) -> &'static Format {
        Box::leak(Box::new(Format {
            name,
            aliases: &[],
            description: "",
            extensions: &[],
            sniff: |_| Confidence::No,
            import: None,
            export: None,
            order: tracex_ir::EventOrder::Unsorted,
            input: formats::InputKind::Stream,
            diagnostics: &[],
            refines,
            select_activity: None,
        }))
    }

    #[test]
    fn a_refinement_wins_a_tie_only_over_what_it_refines() {
        let chrome = format("chrome", None);
        let cupti = format("cupti", Some("chrome"));
        let other = format("other", None);
        let pick = |v: &[&'static Format]| refining_winner(v.iter().copied()).map(|f| f.name);
        assert_eq!(pick(&[chrome, cupti]), Some("cupti"));
        assert_eq!(pick(&[cupti, chrome]), Some("cupti"));
        // a tie with a format it does not refine stays ambiguous
        assert_eq!(pick(&[chrome, cupti, other]), None);
        assert_eq!(pick(&[chrome, other]), None);
    }
}
