//! The buffer of trace events being written: one event per line, separators, the common head
//! of an event, and metadata (`M`) records.

use tracex_ir::time::push_micros;
use tracex_ir::Defs;

use super::json::{push_int, push_str, Literals, Text};

/// Key, in the args of a name record, of the metadata records whose names viewers do not know.
pub const META_KEY: &str = "tracex_meta";

/// Metadata names written as `M` records of their own: the ones catapult and TraceLens read.
/// Other names (nsys GPU properties, Node's `node`, ...) ride in the args of a name record.
pub const VIEWER_METADATA: &[&str] = &[
    "process_labels",
    "process_uptime_seconds",
    "num_cpus",
    "stackFrames",
    "typeNames",
    "TraceConfig",
];

pub struct Events {
    pub buf: Vec<u8>,
    pub lits: Literals,
    first: bool,
    /// Events written so far.
    pub count: u64,
    /// Added to every time written (ns), so that no time is negative or too large for a double.
    pub shift: i64,
}

impl Events {
    pub fn new() -> Events {
        Events {
            buf: Vec::with_capacity(1 << 16),
            lits: Literals::default(),
            first: true,
            count: 0,
            shift: 0,
        }
    }

    /// Starts an event (with the separator from the previous one).
    pub fn begin(&mut self) {
        if !self.first {
            self.buf.extend_from_slice(b",\n");
        }
        self.first = false;
        self.count += 1;
    }

    /// `{"ph":..,"name":..,"cat":..,"pid":..,"tid":..,"ts":..` common to timed events.
    pub fn head(
        &mut self,
        defs: &Defs,
        ph: &str,
        (name, cat): (Option<Text>, Option<Text>),
        ids: (i64, i64),
        ts: i64,
    ) {
        let b = &mut self.buf;
        b.extend_from_slice(b"{\"ph\":\"");
        b.extend_from_slice(ph.as_bytes());
        b.push(b'"');
        if let Some(n) = name {
            b.extend_from_slice(b",\"name\":");
            n.push(b, &mut self.lits, defs);
        }
        // Catapult drops nestable async events without a `cat`; the importer reads "" there
        // back as none
        let cat = cat.or_else(|| matches!(ph, "b" | "e" | "n").then_some(Text::Str("")));
        if let Some(c) = cat {
            b.extend_from_slice(b",\"cat\":");
            c.push(b, &mut self.lits, defs);
        }
        b.extend_from_slice(b",\"pid\":");
        push_int(b, ids.0);
        b.extend_from_slice(b",\"tid\":");
        push_int(b, ids.1);
        b.extend_from_slice(b",\"ts\":");
        self.time(ts);
    }

    /// A time in µs with three decimals, shifted.
    pub fn time(&mut self, ts: i64) {
        push_micros(&mut self.buf, ts + self.shift);
    }

    /// One `M` record with raw JSON args.
    pub fn meta(&mut self, name: &str, pid: i64, tid: Option<i64>, args: &[u8]) {
        self.begin();
        let b = &mut self.buf;
        b.extend_from_slice(b"{\"ph\":\"M\",\"name\":");
        push_str(b, name);
        b.extend_from_slice(b",\"pid\":");
        push_int(b, pid);
        if let Some(t) = tid {
            b.extend_from_slice(b",\"tid\":");
            push_int(b, t);
        }
        b.extend_from_slice(b",\"args\":");
        b.extend_from_slice(args);
        b.push(b'}');
    }

    /// A `process_name` (no `tid`) or `thread_name` record; `identity` is tracex's own record of
    /// the original ids, kept in the args beside the name where viewers ignore it.
    pub fn name(&mut self, pid: i64, tid: Option<i64>, name: &str, identity: Option<&[u8]>) {
        self.name_with(pid, tid, name, identity, None);
    }

    /// A name record that also carries metadata records of names viewers do not know
    /// (`meta`: a JSON object of them), which catapult warns about and TraceLens cannot read.
    ///
    /// An empty name is not written as `args.name`: trace processor counts `"name":""` as a
    /// parser failure. It rides in the identity record instead (`"name":""`), which the importer
    /// reads back, and viewers show the thread or process as they would an unnamed one.
    pub fn name_with(
        &mut self,
        pid: i64,
        tid: Option<i64>,
        name: &str,
        identity: Option<&[u8]>,
        meta: Option<&[u8]>,
    ) {
        let mut a = b"{".to_vec();
        let with_name;
        let identity = if name.is_empty() {
            with_name = with_empty_name(identity);
            Some(with_name.as_slice())
        } else {
            a.extend_from_slice(b"\"name\":");
            push_str(&mut a, name);
            identity
        };
        for (key, v) in [(crate::import::IDENTITY, identity), (META_KEY, meta)] {
            if let Some(v) = v {
                if a.len() > 1 {
                    a.push(b',');
                }
                a.push(b'"');
                a.extend_from_slice(key.as_bytes());
                a.extend_from_slice(b"\":");
                a.extend_from_slice(v);
            }
        }
        a.push(b'}');
        let kind = if tid.is_some() {
            "thread_name"
        } else {
            "process_name"
        };
        self.meta(kind, pid, tid, &a);
    }
}

/// An identity object (`{...}`, or none) with `"name":""` added: the empty name of its record.
fn with_empty_name(identity: Option<&[u8]>) -> Vec<u8> {
    const ALONE: &[u8] = b"{\"name\":\"\"}";
    // the writers' identity objects are `{...}` with nothing around them
    match identity.and_then(|i| i.strip_suffix(b"}")) {
        Some(open) if open != b"{" => [open, b",", &ALONE[1..]].concat(),
        _ => ALONE.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::with_empty_name;

    #[test]
    fn the_empty_name_joins_the_identity() {
        let empty = br#"{"name":""}"#.to_vec();
        assert_eq!(with_empty_name(None), empty);
        assert_eq!(with_empty_name(Some(b"{}")), empty);
        assert_eq!(
            with_empty_name(Some(br#"{"tid":null,"label":"worker"}"#)),
            br#"{"tid":null,"label":"worker","name":""}"#.to_vec()
        );
    }
}
