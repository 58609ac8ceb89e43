//! Output files that appear only when complete: written to a temporary name beside the target
//! and renamed on success, removed if dropped before.
//!
//! Temporary names are `.NAME.tracex-tmp-PID-RANDOM` (made by `tempfile`, so they never clash):
//! the process id lets a later run remove what a killed one (SIGKILL, the OOM killer) left
//! behind, and only that: a temporary whose process still exists is never touched.

use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use tempfile::{Builder, TempPath};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// What every temporary name holds between the output's name and the process id.
const TMP_MARK: &str = ".tracex-tmp-";

fn parent_dir(dest: &Path) -> PathBuf {
    match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn temp_prefix(dest: &Path) -> String {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    format!(".{name}{TMP_MARK}{}-", std::process::id())
}

/// The error of a temporary file that could not be made for `purpose` ("to sort events"):
/// names the temporary directory and the remedy, which the OS error alone does not.
pub fn temp_file_error(e: io::Error, purpose: &str) -> io::Error {
    io::Error::new(
        e.kind(),
        format!(
            "cannot create a temporary file in {} {purpose} (set TMPDIR to a writable \
             directory): {e}",
            std::env::temp_dir().display(),
        ),
    )
}

/// A temporary path beside `dest` (same directory, so the final rename is atomic); nothing is
/// created. Prefer [`AtomicFile`] or [`temp_dir_beside`], which create the path safely.
pub fn temp_path_beside(dest: &Path) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    parent_dir(dest).join(format!("{}{n}", temp_prefix(dest)))
}

/// Runs `make` with a builder for a temporary beside `dest`: its name, and read/write for
/// everyone the umask allows, as `File::create` makes files (tempfile's own default is
/// owner-only, which would stay on the renamed output).
fn with_builder<T>(
    dest: &Path,
    dir_mode: bool,
    make: impl FnOnce(&Builder<'_, '_>) -> io::Result<T>,
) -> io::Result<T> {
    let prefix = temp_prefix(dest);
    let mut b = Builder::new();
    b.prefix(&prefix).rand_bytes(6);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = if dir_mode { 0o777 } else { 0o666 };
        b.permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = dir_mode;
    make(&b)
}

/// Creates a temporary directory beside `dest` and returns its path; the caller removes it
/// (or renames it into place). Stale temporaries in that directory are removed first.
pub fn temp_dir_beside(dest: &Path) -> io::Result<PathBuf> {
    let dir = parent_dir(dest);
    remove_stale_temporaries(&dir);
    // Created and registered under the registry's lock: an exit that removes the registered
    // temporaries (it keeps the lock) cannot fall between the two.
    let mut live = LIVE
        .lock()
        .map_err(|_| io::Error::other("temporaries registry poisoned"))?;
    let tmp = with_builder(dest, true, |b| b.tempdir_in(&dir))?.keep();
    live.push(tmp.clone());
    Ok(tmp)
}

/// The temporaries this process has open: removed by [`remove_own_temporaries`] when the
/// process must stop at once (a memory limit) without unwinding to their owners.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Forgets a temporary that was removed or renamed into place.
pub fn unregister(p: &Path) {
    if let Ok(mut v) = LIVE.lock() {
        v.retain(|q| q != p);
    }
}

/// Removes every temporary this process still has (files and directories); for an exit that
/// skips destructors. Holds the registry's lock until the process exits, so no commit runs
/// half-way meanwhile.
pub fn remove_own_temporaries() {
    let guard = LIVE.lock();
    if let Ok(v) = &guard {
        for p in v.iter() {
            let _ = std::fs::remove_dir_all(p).or_else(|_| std::fs::remove_file(p));
        }
    }
    std::mem::forget(guard);
}

/// The process id in a temporary's name, if the name is one of tracex's.
fn temp_owner(name: &str) -> Option<u32> {
    let rest = &name[name.find(TMP_MARK)? + TMP_MARK.len()..];
    let pid = &rest[..rest.find('-')?];
    (name.starts_with('.') && !pid.is_empty()).then_some(())?;
    pid.parse().ok()
}

/// Whether process `pid` exists; `None` where this cannot be told (no /proc).
fn process_exists(pid: u32) -> Option<bool> {
    if !Path::new("/proc/self").exists() {
        return None;
    }
    Some(Path::new("/proc").join(pid.to_string()).exists())
}

/// Removes the temporaries in `dir` left by tracex processes that no longer exist (killed
/// before they could clean up), and says so on stderr. Each directory is swept once per run.
/// Returns what was removed.
pub fn remove_stale_temporaries(dir: &Path) -> Vec<PathBuf> {
    static SWEPT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
    let key = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    match SWEPT.lock() {
        Ok(mut s) => {
            if !s.get_or_insert_with(HashSet::new).insert(key) {
                return Vec::new();
            }
        }
        Err(_) => return Vec::new(),
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let me = std::process::id();
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = temp_owner(&name) else {
            continue;
        };
        if pid == me || process_exists(pid) != Some(false) {
            continue;
        }
        let p = e.path();
        let gone = match e.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&p),
            _ => std::fs::remove_file(&p),
        };
        match gone {
            Ok(()) => {
                eprintln!(
                    "tracex: removed {}, a temporary left by tracex process {pid}, which no \
                     longer exists (killed before it finished)",
                    p.display()
                );
                removed.push(p);
            }
            Err(err) => eprintln!(
                "tracex: warning: cannot remove {}, a temporary left by tracex process {pid}: {err}",
                p.display()
            ),
        }
    }
    removed
}

/// A file written under a temporary name and renamed to its destination by [`AtomicFile::commit`].
#[derive(Debug)]
pub struct AtomicFile {
    tmp: Option<TempPath>,
    dest: PathBuf,
    file: Option<File>,
}

impl AtomicFile {
    pub fn create(dest: &Path) -> io::Result<AtomicFile> {
        let dir = parent_dir(dest);
        remove_stale_temporaries(&dir);
        // see temp_dir_beside: created and registered under the registry's lock
        let mut live = LIVE
            .lock()
            .map_err(|_| io::Error::other("temporaries registry poisoned"))?;
        let (file, tmp) = with_builder(dest, false, |b| b.tempfile_in(&dir))?.into_parts();
        live.push(tmp.to_path_buf());
        drop(live);
        Ok(AtomicFile {
            tmp: Some(tmp),
            dest: dest.to_path_buf(),
            file: Some(file),
        })
    }

    pub fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("file open until commit")
    }

    /// Takes the file handle out (for wrapping in a writer); commit still renames the path.
    pub fn take_file(&mut self) -> File {
        self.file.take().expect("file open until commit")
    }

    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Moves the finished file to its destination, replacing what was there.
    pub fn commit(mut self) -> io::Result<()> {
        self.file = None;
        let tmp = self.tmp.take().expect("committed once");
        let path = tmp.to_path_buf();
        let _live = LIVE.lock();
        if exchanged(&path, &self.dest) {
            // the temporary's name now holds the replaced file: removed with it
            drop(tmp);
            drop(_live);
            unregister(&path);
            return Ok(());
        }
        match tmp.persist(&self.dest) {
            Ok(()) => {
                drop(_live);
                unregister(&path);
                Ok(())
            }
            Err(e) => {
                // the TempPath comes back and removes the temporary when dropped
                drop(e.path);
                drop(_live);
                unregister(&path);
                Err(e.error)
            }
        }
    }
}

/// Swaps a finished temporary with the regular file at `dest` in one step (both names stay
/// valid throughout), so that the old file can be removed under the temporary's name. A rename
/// over an existing file makes ext4 write the new file's data out before the rename returns
/// (its `auto_da_alloc`): half a second for a 1 GB output. False, and nothing done, when
/// `dest` is not a regular file or the filesystem cannot swap.
#[cfg(target_os = "linux")]
fn exchanged(tmp: &Path, dest: &Path) -> bool {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    let regular = std::fs::symlink_metadata(dest).is_ok_and(|m| m.file_type().is_file());
    regular && renameat_with(CWD, tmp, CWD, dest, RenameFlags::EXCHANGE).is_ok()
}

#[cfg(not(target_os = "linux"))]
fn exchanged(_tmp: &Path, _dest: &Path) -> bool {
    false
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let path = tmp.to_path_buf();
            drop(tmp);
            unregister(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn appears_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.json");
        let mut f = AtomicFile::create(&dest).unwrap();
        f.file().write_all(b"{}").unwrap();
        assert!(!dest.exists());
        f.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"{}");

        let dest2 = dir.path().join("failed.json");
        {
            let mut f = AtomicFile::create(&dest2).unwrap();
            f.file().write_all(b"partial").unwrap();
        }
        assert!(!dest2.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// Entries of `dir`: what a commit left (temporaries included).
    fn entries(dir: &Path) -> usize {
        std::fs::read_dir(dir).unwrap().count()
    }

    #[test]
    fn replaces_a_file_and_leaves_neither_it_nor_a_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.json");
        std::fs::write(&dest, b"old and longer").unwrap();
        let mut f = AtomicFile::create(&dest).unwrap();
        f.file().write_all(b"new").unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"old and longer");
        f.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"new");
        assert_eq!(entries(dir.path()), 1);
    }

    #[cfg(unix)]
    #[test]
    fn replaces_a_symlink_itself_not_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.json");
        let dest = dir.path().join("out.json");
        std::fs::write(&target, b"kept").unwrap();
        std::os::unix::fs::symlink(&target, &dest).unwrap();
        let mut f = AtomicFile::create(&dest).unwrap();
        f.file().write_all(b"new").unwrap();
        f.commit().unwrap();
        assert!(std::fs::symlink_metadata(&dest).unwrap().is_file());
        assert_eq!(std::fs::read(&dest).unwrap(), b"new");
        assert_eq!(std::fs::read(&target).unwrap(), b"kept");
        assert_eq!(entries(dir.path()), 2);
    }

    #[test]
    fn a_directory_in_the_way_is_an_error_and_stays() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.json");
        std::fs::create_dir(&dest).unwrap();
        std::fs::write(dest.join("inside"), b"x").unwrap();
        let mut f = AtomicFile::create(&dest).unwrap();
        f.file().write_all(b"new").unwrap();
        assert!(f.commit().is_err());
        assert_eq!(std::fs::read(dest.join("inside")).unwrap(), b"x");
        assert_eq!(entries(dir.path()), 1);
    }
}

/// Where an exporter writes: a file path or standard output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputTarget {
    Path(PathBuf),
    Stdout,
}

impl OutputTarget {
    /// Whether the target's name ends with `suffix` (case-insensitive); stdout never does.
    pub fn has_suffix(&self, suffix: &str) -> bool {
        match self {
            OutputTarget::Path(p) => p
                .to_string_lossy()
                .to_ascii_lowercase()
                .ends_with(&suffix.to_ascii_lowercase()),
            OutputTarget::Stdout => false,
        }
    }
}

/// A buffered output that becomes visible at its path only on [`OutFile::commit`].
pub struct OutFile {
    w: io::BufWriter<Box<dyn io::Write + Send>>,
    atomic: Option<AtomicFile>,
}

impl OutFile {
    pub fn create(target: &OutputTarget) -> io::Result<OutFile> {
        match target {
            OutputTarget::Path(p) => {
                let mut a = AtomicFile::create(p)?;
                let f = a.take_file();
                Ok(OutFile {
                    w: io::BufWriter::with_capacity(1 << 20, Box::new(f)),
                    atomic: Some(a),
                })
            }
            OutputTarget::Stdout => Ok(OutFile {
                w: io::BufWriter::with_capacity(1 << 20, Box::new(io::stdout())),
                atomic: None,
            }),
        }
    }

    /// Flushes and moves the file into place.
    pub fn commit(self) -> io::Result<()> {
        let OutFile { w, atomic } = self;
        let inner = w.into_inner().map_err(|e| e.into_error())?;
        drop(inner);
        match atomic {
            Some(a) => a.commit(),
            None => Ok(()),
        }
    }
}

impl io::Write for OutFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.w.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.w.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

/// Reads a text input line by line with 1-based line numbers, without requiring UTF-8 (a line
/// of binary data is the caller's to report). `\n` and `\r\n` endings are removed.
///
/// Lines are found with SIMD `memchr` in a buffer of whole reads and lent from it: copying each
/// line out with `read_until` (core's byte-wise `memchr`) was a tenth of importing a million
/// uprobe stacks.
pub struct LineReader<R> {
    r: R,
    buf: Vec<u8>,
    /// The unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    eof: bool,
    line: u64,
}

/// How much a reader of an input asks for at once, at least: the capacity of the `BufReader`
/// the CLI reads inputs through, which then hands each read to the file instead of copying
/// its own buffer's bytes (a copy of the whole input). Reads of 1 MiB touched 250 more pages
/// in the 20k-launch GPU merge than reads of 128 KiB, and left its read-ahead threads 5% more
/// to do, for no gain on large inputs.
pub const READ_SIZE: usize = 128 << 10;

/// The buffer's first size; it doubles for a longer line. Reads ask for what the buffer has
/// room for, which stays above [`READ_SIZE`]: a read and room for the partial line moved to
/// the front. Each page of the buffer is faulted in when first read into.
const LINE_READ: usize = READ_SIZE + (64 << 10);

impl<R: io::Read> LineReader<R> {
    pub fn new(r: R) -> Self {
        LineReader {
            r,
            buf: vec![0; LINE_READ],
            start: 0,
            end: 0,
            eof: false,
            line: 0,
        }
    }

    /// The next line and its number, or `None` at the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<(u64, &[u8])>> {
        // bytes of the current line already searched for a newline
        let mut searched = 0;
        let (from, to) = loop {
            let unread = &self.buf[self.start + searched..self.end];
            if let Some(i) = memchr::memchr(b'\n', unread) {
                let nl = self.start + searched + i;
                let from = self.start;
                self.start = nl + 1;
                break (from, nl);
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let from = self.start;
                self.start = self.end;
                break (from, self.end);
            }
            searched = self.end - self.start;
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, searched);
            if self.end == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let n = loop {
                match self.r.read(&mut self.buf[self.end..]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    other => break other?,
                }
            };
            self.eof = n == 0;
            self.end += n;
        };
        self.line += 1;
        let line = &self.buf[from..to];
        Ok(Some((self.line, line.strip_suffix(b"\r").unwrap_or(line))))
    }
}

#[cfg(test)]
mod line_tests {
    use super::LineReader;

    #[test]
    fn numbers_lines_and_strips_endings() {
        let mut r = LineReader::new(&b"a 1\r\n\nb\xff 2"[..]);
        assert_eq!(r.next_line().unwrap(), Some((1, &b"a 1"[..])));
        assert_eq!(r.next_line().unwrap(), Some((2, &b""[..])));
        assert_eq!(r.next_line().unwrap(), Some((3, &b"b\xff 2"[..])));
        assert_eq!(r.next_line().unwrap(), None);
    }

    /// Reads a byte at a time, so that every line crosses reads.
    struct Trickle<'a>(&'a [u8]);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(buf.len()).min(1);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn reads_ask_for_a_mebibyte_or_more_and_the_buffer_stays() {
        struct Asked<'a>(&'a [u8], Vec<usize>);
        impl std::io::Read for Asked<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.1.push(buf.len());
                self.0.read(buf)
            }
        }
        let line = "1761700000000004977 app 40000 40000 13 _start;main;run;cudaLaunchKernel\n";
        let text = line.repeat((5 << 20) / line.len());
        let mut r = LineReader::new(Asked(text.as_bytes(), Vec::new()));
        let mut n = 0;
        while r.next_line().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, text.len() / line.len());
        assert_eq!(r.buf.len(), super::LINE_READ, "the buffer grew");
        // room for a read that bypasses the CLI's `BufReader`, the last (at the end) aside
        let asked = &r.r.1;
        assert!(asked.len() > 4, "{asked:?}");
        assert!(asked.iter().all(|&k| k >= super::READ_SIZE), "{asked:?}");
    }

    #[test]
    fn lines_across_reads_and_longer_than_the_buffer() {
        let long = "x".repeat(super::LINE_READ * 2 + 3);
        let text = format!("a\r\n{long}\nb\r");
        for trickle in [false, true] {
            let mut got = Vec::new();
            let mut read = |r: &mut LineReader<&mut dyn std::io::Read>| {
                while let Some((no, l)) = r.next_line().unwrap() {
                    got.push((no, l.len()));
                }
            };
            if trickle {
                let mut t = Trickle(text.as_bytes());
                read(&mut LineReader::new(&mut t as &mut dyn std::io::Read));
            } else {
                let mut b = text.as_bytes();
                read(&mut LineReader::new(&mut b as &mut dyn std::io::Read));
            }
            assert_eq!(got, [(1, 1), (2, long.len()), (3, 1)], "trickle {trickle}");
        }
    }
}

/// A writer whose bytes are written (and compressed, when `W` compresses) on another thread:
/// the producing thread only fills buffers. `finish` returns the inner writer once everything
/// is written, so its owner can complete it (end a gzip stream, commit a file).
pub struct BackgroundWriter<W: io::Write + Send + 'static> {
    buf: Vec<u8>,
    tx: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    /// Chunks the thread has written, to be filled again: a fresh megabyte per chunk is a
    /// fresh mapping whose pages the kernel zeroes as they are first touched.
    spent: std::sync::mpsc::Receiver<Vec<u8>>,
    handle: Option<std::thread::JoinHandle<io::Result<W>>>,
}

const CHUNK: usize = 1 << 20;
/// Chunks queued for the thread at most.
const QUEUED: usize = 4;

impl<W: io::Write + Send + 'static> BackgroundWriter<W> {
    pub fn new(mut inner: W) -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(QUEUED);
        // room for every chunk there can be, so that the thread never waits to hand one back
        let (back, spent) = std::sync::mpsc::sync_channel::<Vec<u8>>(QUEUED + 2);
        let handle = std::thread::spawn(move || {
            for mut chunk in rx {
                inner.write_all(&chunk)?;
                chunk.clear();
                let _ = back.try_send(chunk);
            }
            inner.flush()?;
            Ok(inner)
        });
        BackgroundWriter {
            buf: Vec::with_capacity(CHUNK),
            tx: Some(tx),
            spent,
            handle: Some(handle),
        }
    }

    fn join(&mut self) -> io::Result<W> {
        self.tx = None;
        match self.handle.take() {
            Some(h) => h
                .join()
                .map_err(|_| io::Error::other("the writer thread panicked"))?,
            None => Err(io::Error::other("writer already finished")),
        }
    }

    fn send(&mut self) -> io::Result<()> {
        let next = (self.spent.try_recv()).unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        let chunk = std::mem::replace(&mut self.buf, next);
        self.send_chunk(chunk)
    }

    /// Hands `data` to the thread as it is, without copying it, when nothing is buffered and
    /// it is big enough to be a chunk of its own; `data` comes back empty (with the capacity of
    /// a written chunk when there is one). Otherwise it is written as [`io::Write::write_all`].
    pub fn hand_over(&mut self, data: &mut Vec<u8>) -> io::Result<()> {
        if !self.buf.is_empty() || data.len() < CHUNK / 2 {
            io::Write::write_all(self, data)?;
            data.clear();
            return Ok(());
        }
        let next = (self.spent.try_recv()).unwrap_or_else(|_| Vec::with_capacity(data.len()));
        let chunk = std::mem::replace(data, next);
        self.send_chunk(chunk)
    }

    fn send_chunk(&mut self, chunk: Vec<u8>) -> io::Result<()> {
        let sent = self
            .tx
            .as_ref()
            .map(|tx| tx.send(chunk).is_ok())
            .unwrap_or(false);
        if !sent {
            // the writer stopped on an error: report it
            return match self.join() {
                Err(e) => Err(e),
                Ok(_) => Err(io::Error::other("the writer thread stopped")),
            };
        }
        Ok(())
    }

    /// Writes what is buffered, waits for the thread, and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        if !self.buf.is_empty() {
            self.send()?;
        }
        self.join()
    }
}

/// Dropped without `finish` (a failed conversion): waits for the thread, so the inner writer
/// is dropped too (an unfinished `AtomicFile` removes its temporary file) before going on.
impl<W: io::Write + Send + 'static> Drop for BackgroundWriter<W> {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl<W: io::Write + Send + 'static> io::Write for BackgroundWriter<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod background_tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn writes_everything_in_order() {
        let mut w = BackgroundWriter::new(Vec::new());
        for i in 0..300_000u32 {
            w.write_all(&i.to_le_bytes()).unwrap();
        }
        let v = w.finish().unwrap();
        assert_eq!(v.len(), 1_200_000);
        assert_eq!(&v[4..8], &1u32.to_le_bytes());
    }

    /// Buffers handed over whole and bytes written in between come out in order.
    #[test]
    fn handed_over_buffers_keep_their_place() {
        let mut w = BackgroundWriter::new(Vec::new());
        let mut want = Vec::new();
        let mut buf = Vec::new();
        for round in 0..40u32 {
            let n = if round % 3 == 0 {
                10
            } else {
                CHUNK - 5 + round as usize
            };
            buf.extend((0..n).map(|i| (i as u32 ^ round) as u8));
            want.extend_from_slice(&buf);
            w.hand_over(&mut buf).unwrap();
            assert!(buf.is_empty());
            let small = [round as u8; 7];
            want.extend_from_slice(&small);
            w.write_all(&small).unwrap();
        }
        assert!(w.finish().unwrap() == want);
    }

    struct Failing;
    impl io::Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn dropping_unfinished_removes_the_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.json");
        let mut w =
            BackgroundWriter::new(OutFile::create(&OutputTarget::Path(dest.clone())).unwrap());
        w.write_all(&[b'x'; 3 * CHUNK]).unwrap();
        drop(w);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn reports_the_writer_error() {
        let mut w = BackgroundWriter::new(Failing);
        let mut err = None;
        for _ in 0..10 {
            if let Err(e) = w.write_all(&[0u8; CHUNK]) {
                err = Some(e);
                break;
            }
        }
        let e = match err {
            Some(e) => e,
            None => w.finish().err().expect("an error"),
        };
        assert!(e.to_string().contains("disk full"), "{e}");
    }
}

#[cfg(test)]
mod stale_tests {
    use super::*;

    #[test]
    fn names_carry_the_process_id_and_parse_back() {
        let p = temp_path_beside(Path::new("dir/out.json"));
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(temp_owner(&name), Some(std::process::id()));
        assert_eq!(temp_owner(".out.json.tracex-tmp-x-1"), None);
        assert_eq!(temp_owner("out.json"), None);
    }

    #[test]
    fn files_are_created_with_the_usual_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("o.json");
        AtomicFile::create(&dest).unwrap().commit().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&dest).unwrap().permissions().mode();
            assert_ne!(
                mode & 0o044,
                0,
                "output readable only by its owner: {mode:o}"
            );
        }
    }
}
