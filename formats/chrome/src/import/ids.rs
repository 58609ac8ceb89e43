//! Process and thread identity: Chrome pids and tids may be integers or strings; the IR keeps the
//! OS number apart from the identity (a string id becomes a label), and the
//! `tracex_identity` metadata records tracex writes on export restore ids it had to remap.

use std::borrow::Cow;

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::value::RawValue;

use super::raw::Raw;
use tracex_ir::{
    Defs, Diagnostics, Location, NamePriority, Process, ProcessId, ProcessKind, ThreadId, Track,
    TrackId, TrackKind,
};

use crate::diag as d;

/// Name of the metadata record that carries tracex's identity information.
pub const IDENTITY: &str = "tracex_identity";

/// A pid or tid as the input wrote it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IdKey {
    Missing,
    Int(i64),
    Text(Box<str>),
}

impl IdKey {
    /// The key of a raw JSON value; the flag is set when its type is not number or string.
    pub fn of(raw: Option<Raw<'_>>) -> (IdKey, bool) {
        let Some(raw) = raw else {
            return (IdKey::Missing, false);
        };
        let t = raw.get();
        match t.as_bytes().first() {
            Some(b'"') => match serde_json::from_str::<String>(t) {
                // Kineto writes "tid": "25738" on some events and 25738 on others: one thread
                Ok(s) => match canonical_int(&s) {
                    Some(i) => (IdKey::Int(i), false),
                    None => (IdKey::Text(s.into()), false),
                },
                Err(_) => (IdKey::Text(t.into()), true),
            },
            Some(b'-' | b'0'..=b'9') => match t.parse::<i64>() {
                Ok(i) => (IdKey::Int(i), false),
                // floats and numbers beyond i64 keep their exact text
                Err(_) => (IdKey::Text(t.into()), false),
            },
            _ => (IdKey::Text(t.into()), true),
        }
    }
}

/// The number an id stands for, as viewers read it: a non-negative integer, a decimal string, or
/// a `0x` hex string (Perfetto reads string flow ids as hex).
pub fn numeric_id(raw: Raw<'_>) -> Option<u64> {
    let t = raw.get();
    if let Ok(n) = t.parse::<u64>() {
        return Some(n);
    }
    let s = serde_json::from_str::<String>(t).ok()?;
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => canonical_int(&s).and_then(|i| u64::try_from(i).ok()),
    }
}

/// A string that is a plain decimal integer (`"25738"`, `"-1"`; not `"007"`, `"+5"`, `"1e3"`):
/// the integer, as catapult and Perfetto read such a pid or tid.
pub fn canonical_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let plain = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && s != "-0";
    plain.then(|| s.parse::<i64>().ok()).flatten()
}

/// The text of an id value: a string's content, or a number's text (borrowed: a flow id is
/// looked up once per flow point, and allocating it each time was 3% of a Chrome import).
pub fn id_text(raw: Raw<'_>) -> Cow<'_, str> {
    let t = raw.get();
    if t.starts_with('"') {
        Cow::Owned(serde_json::from_str::<String>(t).unwrap_or_else(|_| t.to_string()))
    } else {
        Cow::Borrowed(t)
    }
}

/// The identity text of an async or flow id, with its scope: `id` as its JSON text (so the string
/// `"1"` and the number `1` differ), `id2` as `local:<text>` or `global:<text>`, and a `scope`
/// as a `<scope>:` prefix. The exporter turns such a label back into the same fields.
pub fn scoped_id<'a>(
    scope: Option<&str>,
    id: Option<Raw<'a>>,
    id2: Option<Raw<'a>>,
) -> Cow<'a, str> {
    if let (None, None, Some(id)) = (scope, id2, id) {
        return match written_big_id(id.get()) {
            Some(n) => Cow::Owned(n.to_string()),
            None => Cow::Borrowed(id.get()),
        };
    }
    let mut s = String::new();
    if let Some(sc) = scope {
        s.push_str("scope:");
        s.push_str(&sc.replace(':', "\\:"));
        s.push(':');
    }
    if let Some(id2) = id2 {
        if let Ok(obj) = serde_json::from_str::<FxHashMap<String, Box<RawValue>>>(id2.get()) {
            for field in ["local", "global"] {
                if let Some(v) = obj.get(field) {
                    s.push_str(field);
                    s.push(':');
                    push_id(&mut s, v.get());
                    return Cow::Owned(s);
                }
            }
        }
        s.push_str("id2:");
        s.push_str(id2.get());
        return Cow::Owned(s);
    }
    if let Some(id) = id {
        push_id(&mut s, id.get());
    }
    Cow::Owned(s)
}

/// Appends an id's JSON text to a label: the integer where the exporter wrote one as a string.
fn push_id(s: &mut String, json: &str) {
    match written_big_id(json) {
        Some(n) => s.push_str(&n.to_string()),
        None => s.push_str(json),
    }
}

/// The integer of an id as tracex's exporter writes one a double does not hold exactly (beyond
/// 2^53, as a `"0x…"` string in lowercase without leading zeros), so that it reads back as the
/// integer it was written for and the round trip is exact.
fn written_big_id(json: &str) -> Option<u64> {
    let hex = json.strip_prefix("\"0x")?.strip_suffix('"')?;
    let plain =
        !hex.starts_with('0') && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let n = u64::from_str_radix(hex, 16).ok().filter(|_| plain)?;
    (n > crate::export::MAX_SAFE_ID).then_some(n)
}

/// Where a `thread_name`-like metadata record applies.
pub enum MetaTarget {
    Thread(ThreadId),
    /// A GPU stream tracex wrote as a thread.
    Track(TrackId),
    /// An overflow lane tracex wrote as a thread: its names are tracex's own.
    Ignore,
}

#[derive(Default)]
pub struct Identities {
    procs: FxHashMap<IdKey, ProcessId>,
    threads: FxHashMap<(ProcessId, IdKey), ThreadId>,
    /// (pid, tid) pairs tracex wrote for tracks that are not threads.
    overrides: FxHashMap<(ProcessId, IdKey), (TrackId, bool)>,
    unnamed_procs: FxHashSet<ProcessId>,
    unnamed_threads: FxHashSet<ThreadId>,
    unnamed_tracks: FxHashSet<TrackId>,
    /// The process tracex writes for things that belong to no process (global counters).
    global_procs: FxHashSet<ProcessId>,
    /// The tracks of the last (pid, tid) texts seen: events come from a few threads at a time
    /// (CUPTI JSON alternates a runtime call on its thread and a kernel without pid or tid).
    cache: TrackCache,
}

/// A few (pid text, tid text) → track entries, replaced in turn; their strings are reused.
#[derive(Default)]
struct TrackCache {
    entries: Vec<(String, String, TrackId)>,
    next: usize,
}

/// Entries of a [`TrackCache`]: enough for a process's main thread, its GPU streams' records
/// and a helper thread, few enough that a miss costs little.
const TRACK_CACHE: usize = 4;

impl TrackCache {
    fn get(&self, pid: &str, tid: &str) -> Option<TrackId> {
        self.entries
            .iter()
            .find(|(p, t, _)| same(p, pid) && same(t, tid))
            .map(|e| e.2)
    }

    fn insert(&mut self, pid: &str, tid: &str, track: TrackId) {
        if self.entries.len() < TRACK_CACHE {
            self.entries.push((pid.to_string(), tid.to_string(), track));
            return;
        }
        let (p, t, k) = &mut self.entries[self.next];
        p.clear();
        p.push_str(pid);
        t.clear();
        t.push_str(tid);
        *k = track;
        self.next = (self.next + 1) % TRACK_CACHE;
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.next = 0;
    }
}

/// Whether two ids are the same text. Ids are a few digits: comparing them in words instead of
/// calling `memcmp` for each: those calls were 7% of the importing thread's time in the
/// 1M-launch GPU merge (perf), as CUPTI events alternate between threads.
#[inline]
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
    a.len() == b.len()
        && match a.len() {
            0..8 => a.iter().zip(b).all(|(x, y)| x == y),
            // two words that overlap where the length is not 16
            8..=16 => word(a, 0) == word(b, 0) && word(a, a.len() - 8) == word(b, b.len() - 8),
            _ => a == b,
        }
}

/// The name an identity object carries (`"name"`): an empty name, which the exporter cannot
/// write as `args.name`.
pub fn identity_name(identity: &str) -> Option<String> {
    let v = serde_json::from_str::<serde_json::Value>(identity).ok()?;
    Some(v.get("name")?.as_str()?.to_owned())
}

/// Where a `tracex_identity` object was found.
pub enum Identity<'a> {
    /// In the args of a `process_name`/`thread_name` record (tracex 0.2 on): `unnamed` marks that
    /// record's name only.
    InNameRecord(&'a str),
    /// A metadata record of its own (tracex before 0.2): `unnamed` applies to every later name
    /// record of the same process or thread.
    OwnRecord(&'a str),
}

impl Identities {
    pub fn process_by_key(&mut self, defs: &mut Defs, key: IdKey) -> ProcessId {
        if let Some(&p) = self.procs.get(&key) {
            return p;
        }
        let mut proc = Process::default();
        match &key {
            IdKey::Missing => {}
            IdKey::Int(i) => proc.os_pid = Some(*i),
            IdKey::Text(t) => {
                let l = defs.intern(t);
                proc.label = Some(l);
                // A string pid is what viewers show as the process name.
                proc.name = Some(l);
                proc.name_priority = NamePriority::Inferred;
            }
        }
        let p = defs.add_process(proc);
        self.procs.insert(key, p);
        p
    }

    pub fn process(
        &mut self,
        defs: &mut Defs,
        diag: &mut Diagnostics,
        pid: Option<Raw<'_>>,
        index: u64,
    ) -> ProcessId {
        let (key, bad) = IdKey::of(pid);
        if bad {
            diag.record(&d::BAD_ID, Location::Event(index));
        }
        self.process_by_key(defs, key)
    }

    fn thread_by_key(&mut self, defs: &mut Defs, p: ProcessId, key: IdKey) -> ThreadId {
        if let Some(&t) = self.threads.get(&(p, key.clone())) {
            return t;
        }
        let (os_tid, label) = match &key {
            IdKey::Missing => (None, None),
            IdKey::Int(i) => (Some(*i), None),
            IdKey::Text(s) => (None, Some(defs.intern(s))),
        };
        let t = defs.add_thread(p, os_tid, label);
        if let Some(l) = label {
            defs.set_thread_name(t, l, NamePriority::Inferred);
        }
        self.threads.insert((p, key), t);
        t
    }

    /// The track of the thread an event names (or the track tracex wrote under that pid/tid).
    pub fn thread_track(
        &mut self,
        defs: &mut Defs,
        diag: &mut Diagnostics,
        pid: Option<Raw<'_>>,
        tid: Option<Raw<'_>>,
        index: u64,
    ) -> TrackId {
        let pt = pid.map_or("", |r| r.get());
        let tt = tid.map_or("", |r| r.get());
        if let Some(track) = self.cache.get(pt, tt) {
            return track;
        }
        let p = self.process(defs, diag, pid, index);
        let (key, bad) = IdKey::of(tid);
        if bad {
            diag.record(&d::BAD_ID, Location::Event(index));
        }
        let track = match self.overrides.get(&(p, key.clone())) {
            Some(&(t, _)) => t,
            None => {
                let t = self.thread_by_key(defs, p, key);
                defs.thread(t).track
            }
        };
        self.cache.insert(pt, tt, track);
        track
    }

    /// Finds a thread by tid alone (for samples that give no pid): a unique existing match, or a
    /// new thread in a process without pid.
    pub fn thread_by_tid(&mut self, defs: &mut Defs, key: IdKey) -> TrackId {
        let mut found = None;
        let mut count = 0;
        for ((_, k), &t) in &self.threads {
            if *k == key {
                found = Some(t);
                count += 1;
            }
        }
        if count == 1 {
            return defs.thread(found.expect("one match")).track;
        }
        let p = self.process_by_key(defs, IdKey::Missing);
        let t = self.thread_by_key(defs, p, key);
        defs.thread(t).track
    }

    pub fn thread_track_by_keys(&mut self, defs: &mut Defs, pid: IdKey, tid: IdKey) -> TrackId {
        let p = self.process_by_key(defs, pid);
        if let Some(&(t, _)) = self.overrides.get(&(p, tid.clone())) {
            return t;
        }
        let t = self.thread_by_key(defs, p, tid);
        defs.thread(t).track
    }

    /// Where a per-thread metadata record applies.
    pub fn meta_target(
        &mut self,
        defs: &mut Defs,
        diag: &mut Diagnostics,
        pid: Option<Raw<'_>>,
        tid: Option<Raw<'_>>,
        index: u64,
    ) -> MetaTarget {
        let p = self.process(defs, diag, pid, index);
        let (key, _) = IdKey::of(tid);
        match self.overrides.get(&(p, key.clone())) {
            Some(&(t, true)) => MetaTarget::Track(t),
            Some(&(_, false)) => MetaTarget::Ignore,
            None => MetaTarget::Thread(self.thread_by_key(defs, p, key)),
        }
    }

    pub fn is_unnamed_process(&self, p: ProcessId) -> bool {
        self.unnamed_procs.contains(&p)
    }

    pub fn is_unnamed_thread(&self, t: ThreadId) -> bool {
        self.unnamed_threads.contains(&t)
    }

    pub fn is_global(&self, p: ProcessId) -> bool {
        self.global_procs.contains(&p)
    }

    pub fn is_unnamed_track(&self, t: TrackId) -> bool {
        self.unnamed_tracks.contains(&t)
    }

    /// Applies a `tracex_identity` object (see `docs/formats/chrome.md`); returns whether it
    /// marks the name beside it as made up by tracex.
    pub fn apply_identity(
        &mut self,
        defs: &mut Defs,
        diag: &mut Diagnostics,
        pid: Option<Raw<'_>>,
        tid: Option<Raw<'_>>,
        identity: Identity,
        index: u64,
    ) -> bool {
        let (args, persistent) = match identity {
            Identity::InNameRecord(a) => (a, false),
            Identity::OwnRecord(a) => (a, true),
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(args) else {
            return false;
        };
        self.cache.clear();
        let p = self.process(defs, diag, pid, index);
        let made_up = v.get("unnamed").and_then(|u| u.as_bool()) == Some(true);
        let unnamed = made_up && persistent;
        let label = v
            .get("label")
            .and_then(|l| l.as_str())
            .map(|l| defs.intern(l));
        if tid.is_none() {
            let proc = defs.process_mut(p);
            if let Some(pid) = v.get("pid") {
                proc.os_pid = pid.as_i64();
            }
            if label.is_some() {
                proc.label = label;
            }
            if let Some(dev) = v.get("device").and_then(|x| x.as_u64()) {
                proc.kind = ProcessKind::Device { device: dev as u32 };
            }
            if let Some(h) = v.get("host").and_then(|h| h.as_str()) {
                let h = defs.intern(h);
                defs.process_mut(p).host = Some(h);
            }
            if unnamed {
                self.unnamed_procs.insert(p);
            }
            if v.get("global").and_then(|g| g.as_bool()) == Some(true) {
                self.global_procs.insert(p);
            }
            return made_up;
        }
        let (key, _) = IdKey::of(tid);
        if let Some(gs) = v.get("gpu_stream") {
            let device = gs.get("device").and_then(|x| x.as_u64()).unwrap_or(0) as u32;
            let stream = gs.get("stream").and_then(|x| x.as_u64()).unwrap_or(0) as u32;
            let t = defs.add_track(Track {
                kind: TrackKind::GpuStream { device, stream },
                process: Some(p),
                name: None,
                label,
                sort_index: None,
            });
            if unnamed {
                self.unnamed_tracks.insert(t);
            }
            self.overrides.insert((p, key), (t, true));
            return made_up;
        }
        if let Some(of) = v.get("overflow_of") {
            let of_key = match of {
                serde_json::Value::Number(n) if n.as_i64().is_some() => {
                    IdKey::Int(n.as_i64().unwrap_or(0))
                }
                other => IdKey::Text(other.to_string().into()),
            };
            let root = match self.overrides.get(&(p, of_key.clone())) {
                Some(&(t, _)) => t,
                None => {
                    let t = self.thread_by_key(defs, p, of_key);
                    defs.thread(t).track
                }
            };
            self.overrides.insert((p, key), (root, false));
            return made_up;
        }
        let t = self.thread_by_key(defs, p, key);
        let th = defs.thread_mut(t);
        if let Some(tid) = v.get("tid") {
            th.os_tid = tid.as_i64();
        }
        if label.is_some() {
            th.label = label;
        }
        if unnamed {
            self.unnamed_threads.insert(t);
        }
        made_up
    }
}

#[cfg(test)]
mod tests {
    use super::{same, written_big_id};

    /// Only the exact text the exporter writes for an id beyond 2^53 reads as that integer:
    /// other strings stay labels of their own, as catapult compares them as text.
    #[test]
    fn big_ids_read_back_from_the_exporters_text_only() {
        assert_eq!(
            written_big_id("\"0x957b53030c387cf9\""),
            Some(10771294206341709049)
        );
        assert_eq!(written_big_id("\"0x20000000000000\""), Some(1 << 53));
        for other in [
            "\"0x1fffffffffffff\"",    // below 2^53: written as a number
            "\"0x0957b53030c387cf9\"", // a leading zero
            "\"0x957B53030C387CF9\"",  // upper case
            "\"0x1957b53030c387cf9\"", // beyond u64
            "10771294206341709049",
            "\"10771294206341709049\"",
        ] {
            assert_eq!(written_big_id(other), None, "{other}");
        }
    }

    #[test]
    fn ids_are_the_same_exactly_when_their_texts_are() {
        // every length around the word boundaries, a difference at every position
        for len in 0..=24 {
            let a: String = (0..len)
                .map(|i| char::from(b'0' + (i % 10) as u8))
                .collect();
            assert!(same(&a, &a.clone()), "{a}");
            for at in 0..len {
                let mut b = a.clone().into_bytes();
                b[at] = b'x';
                let b = String::from_utf8(b).unwrap();
                assert!(!same(&a, &b), "{a} {b}");
                assert!(!same(&b, &a), "{b} {a}");
            }
            assert!(!same(&a, &format!("{a}0")));
            assert!(!same(&format!("{a}0"), &a));
        }
    }
}
