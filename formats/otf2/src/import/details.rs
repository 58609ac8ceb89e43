//! What the records inside one region say about the work it did: the messages it sent and
//! received, the collective operation it took part in, the I/O it did. Gathered while the
//! region is open and written as arguments of its slice when it is left, so that a viewer shows
//! an `MPI_Send`'s bytes, peer and tag, or a `read`'s file and bytes, where Vampir shows them.

use std::borrow::Cow;

use tracex_ir::{defs::set_arg, Args, Defs, StrId, Value};

use super::defs::Otf2Defs;

/// One value seen, or several different ones (then none is written).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Same<T> {
    #[default]
    Unset,
    One(T),
    Mixed,
}

impl<T: PartialEq + Copy> Same<T> {
    fn see(&mut self, v: T) {
        *self = match *self {
            Same::Unset => Same::One(v),
            Same::One(o) if o == v => Same::One(o),
            _ => Same::Mixed,
        }
    }

    fn one(self) -> Option<T> {
        match self {
            Same::One(v) => Some(v),
            _ => None,
        }
    }
}

/// The point-to-point messages of one direction.
#[derive(Debug, Default)]
struct Messages {
    count: u64,
    bytes: u64,
    peer: Same<u32>,
    tag: Same<u32>,
}

/// The argument keys, interned once per archive.
pub struct Keys {
    send: [StrId; 4],
    recv: [StrId; 4],
    collective: StrId,
    root: StrId,
    coll_sent: StrId,
    coll_received: StrId,
    coll_count: StrId,
    communicator: StrId,
    io_operation: StrId,
    io_file: StrId,
    io_requested: StrId,
    io_bytes: StrId,
    io_count: StrId,
}

impl Keys {
    pub fn new(defs: &mut Defs) -> Keys {
        let mut k = |s: &str| defs.intern(s);
        Keys {
            send: [
                k("send_to"),
                k("send_tag"),
                k("send_bytes"),
                k("send_count"),
            ],
            recv: [
                k("recv_from"),
                k("recv_tag"),
                k("recv_bytes"),
                k("recv_count"),
            ],
            collective: k("collective"),
            root: k("root"),
            coll_sent: k("collective_bytes_sent"),
            coll_received: k("collective_bytes_received"),
            coll_count: k("collective_count"),
            communicator: k("communicator"),
            io_operation: k("io_operation"),
            io_file: k("io_file"),
            io_requested: k("io_bytes_requested"),
            io_bytes: k("io_bytes"),
            io_count: k("io_count"),
        }
    }
}

/// The details of one region (see the module comment).
#[derive(Debug, Default)]
pub struct Detail {
    sent: Messages,
    received: Messages,
    comm: Same<u32>,
    collectives: u64,
    op: Same<u8>,
    root: Same<u32>,
    coll_sent: u64,
    coll_received: u64,
    io_ops: u64,
    io_mode: Same<u8>,
    io_handle: Same<u32>,
    io_requested: u64,
    io_done: u64,
}

impl Detail {
    /// A message sent to (`send`) or received from rank `peer` of `comm`.
    pub fn message(&mut self, send: bool, peer: u32, comm: u32, tag: u32, bytes: u64) {
        let m = if send {
            &mut self.sent
        } else {
            &mut self.received
        };
        m.count += 1;
        m.bytes = m.bytes.saturating_add(bytes);
        m.peer.see(peer);
        m.tag.see(tag);
        self.comm.see(comm);
    }

    /// The end of a collective operation (`root` is `OTF2_UNDEFINED_UINT32` when it has none).
    pub fn collective(&mut self, op: u8, comm: u32, root: u32, sent: u64, received: u64) {
        self.collectives += 1;
        self.op.see(op);
        self.root.see(root);
        self.comm.see(comm);
        self.coll_sent = self.coll_sent.saturating_add(sent);
        self.coll_received = self.coll_received.saturating_add(received);
    }

    /// The begin (`mode`, bytes requested) or the completion (bytes transferred) of an I/O
    /// operation on `handle`.
    pub fn io(&mut self, handle: u32, mode: Option<u8>, bytes: u64) {
        self.io_handle.see(handle);
        match mode {
            Some(m) => {
                self.io_ops += 1;
                self.io_mode.see(m);
                self.io_requested = self.io_requested.saturating_add(bytes);
            }
            None => self.io_done = self.io_done.saturating_add(bytes),
        }
    }

    /// Writes what was gathered as arguments (`docs/formats/otf2.md` lists them). Names that
    /// repeat on every call (communicators, operations, files) are interned.
    pub fn write(&self, d: &Otf2Defs, defs: &mut Defs, k: &Keys, args: &mut Args) {
        for (m, [peer, tag, bytes, count]) in [(&self.sent, k.send), (&self.received, k.recv)] {
            if m.count == 0 {
                continue;
            }
            if let Some(p) = m.peer.one() {
                set_arg(args, peer, Value::UInt(p.into()));
            }
            if let Some(t) = m.tag.one() {
                set_arg(args, tag, Value::UInt(t.into()));
            }
            set_arg(args, bytes, Value::UInt(m.bytes));
            if m.count > 1 {
                set_arg(args, count, Value::UInt(m.count));
            }
        }
        if self.collectives > 0 {
            if let Some(op) = self.op.one() {
                let name = defs.intern(&collective_name(op));
                set_arg(args, k.collective, Value::Sym(name));
            }
            let undefined = otf2_sys::OTF2_UNDEFINED_UINT32;
            if let Some(root) = self.root.one().filter(|&r| r != undefined) {
                set_arg(args, k.root, Value::UInt(root.into()));
            }
            set_arg(args, k.coll_sent, Value::UInt(self.coll_sent));
            set_arg(args, k.coll_received, Value::UInt(self.coll_received));
            if self.collectives > 1 {
                set_arg(args, k.coll_count, Value::UInt(self.collectives));
            }
        }
        if let Some(&(_, name)) = self.comm.one().and_then(|c| d.comms.get(&c)) {
            let name = defs.intern(d.s(name));
            set_arg(args, k.communicator, Value::Sym(name));
        }
        if self.io_ops > 0 || self.io_done > 0 {
            if let Some(mode) = self.io_mode.one() {
                let name = defs.intern(&io_mode_name(mode));
                set_arg(args, k.io_operation, Value::Sym(name));
            }
            if let Some(file) = self.io_handle.one().and_then(|h| d.io_target(h)) {
                let file = defs.intern(file);
                set_arg(args, k.io_file, Value::Sym(file));
            }
            if self.io_ops > 0 {
                set_arg(args, k.io_requested, Value::UInt(self.io_requested));
            }
            set_arg(args, k.io_bytes, Value::UInt(self.io_done));
            if self.io_ops > 1 {
                set_arg(args, k.io_count, Value::UInt(self.io_ops));
            }
        }
    }
}

/// The name of an `OTF2_CollectiveOp`, as `otf2-print` writes it.
fn collective_name(op: u8) -> Cow<'static, str> {
    const NAMES: [&str; 23] = [
        "BARRIER",
        "BCAST",
        "GATHER",
        "GATHERV",
        "SCATTER",
        "SCATTERV",
        "ALLGATHER",
        "ALLGATHERV",
        "ALLTOALL",
        "ALLTOALLV",
        "ALLTOALLW",
        "ALLREDUCE",
        "REDUCE",
        "REDUCE_SCATTER",
        "SCAN",
        "EXSCAN",
        "REDUCE_SCATTER_BLOCK",
        "CREATE_HANDLE",
        "DESTROY_HANDLE",
        "ALLOCATE",
        "DEALLOCATE",
        "CREATE_HANDLE_AND_ALLOCATE",
        "DESTROY_HANDLE_AND_DEALLOCATE",
    ];
    match NAMES.get(op as usize) {
        Some(n) => Cow::Borrowed(n),
        None => Cow::Owned(format!("collective operation {op}")),
    }
}

/// The name of an `OTF2_IoOperationMode`.
fn io_mode_name(mode: u8) -> Cow<'static, str> {
    match mode {
        0 => "read".into(),
        1 => "write".into(),
        2 => "flush".into(),
        m => format!("I/O mode {m}").into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names_follow_libotf2s_numbers() {
        assert_eq!(
            collective_name(otf2_sys::OTF2_COLLECTIVE_OP_ALLREDUCE as u8),
            "ALLREDUCE"
        );
        assert_eq!(
            collective_name(otf2_sys::OTF2_COLLECTIVE_OP_DESTROY_HANDLE_AND_DEALLOCATE as u8),
            "DESTROY_HANDLE_AND_DEALLOCATE"
        );
        assert_eq!(collective_name(200), "collective operation 200");
        assert_eq!(
            io_mode_name(otf2_sys::OTF2_IO_OPERATION_MODE_FLUSH as u8),
            "flush"
        );
    }

    #[test]
    fn values_that_differ_are_not_written() {
        let mut d = Detail::default();
        d.message(false, 1, 0, 8, 256);
        d.message(false, 1, 0, 9, 64);
        let mut defs = Defs::default();
        let keys = Keys::new(&mut defs);
        let mut args = Args::new();
        d.write(&Otf2Defs::default(), &mut defs, &keys, &mut args);
        let text: Vec<String> = args
            .iter()
            .map(|a| format!("{}={:?}", defs.str(a.key), a.value))
            .collect();
        assert_eq!(
            text,
            [
                "recv_from=UInt(1)",
                "recv_bytes=UInt(320)",
                "recv_count=UInt(2)"
            ]
        );
    }
}
