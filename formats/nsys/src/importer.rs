//! What every decoding module shares while rows are read: the names read up front (strings,
//! enums, processes and threads, callchains), the options, the interned keys. Its state is
//! private; decoders go through the small API below, and what only one kind of row needs
//! (API names, counter series, NVTX domains, launches in flight) lives with that decoder.

use rustc_hash::FxHashMap;
use tracex_ir::diag::kinds as ir_kinds;
use tracex_ir::{
    push_arg, Args, Defs, Diagnostics, Location, ProcessId, Result, StackId, StrId, TrackId, Value,
};

use crate::batch::Packed;
use crate::catalogue::How;
use crate::db::Cols;
use crate::diag as d;
use crate::enums::{Enum, Enums};
use crate::identity::{GlobalId, Identity};
use crate::options::{Activities, Activity, ImportOptions};
use crate::stacks::{Callchains, Chain};
use crate::strings::Strings;

/// Interned names used on every row.
pub struct Keys {
    pub cat_runtime: StrId,
    pub cat_driver: StrId,
    pub cat_kernel: StrId,
    pub cat_memcpy: StrId,
    pub cat_memset: StrId,
    pub cat_sync: StrId,
    pub cat_graph: StrId,
    pub cat_nvtx: StrId,
    pub cat_nvtx_kernel: StrId,
    pub cat_cuda_event: StrId,
    pub cat_launch: StrId,
    pub launch: StrId,
    pub correlation_id: StrId,
    pub nvtx: StrId,
}

impl Keys {
    fn new(defs: &mut Defs) -> Keys {
        use tracex_ir::kind::cat;
        Keys {
            cat_runtime: defs.intern(cat::CUDA_RUNTIME),
            cat_driver: defs.intern(cat::CUDA_DRIVER),
            cat_kernel: defs.intern(cat::KERNEL),
            cat_memcpy: defs.intern(cat::MEMCPY),
            cat_memset: defs.intern(cat::MEMSET),
            cat_sync: defs.intern(cat::SYNC),
            cat_graph: defs.intern(cat::GRAPH),
            cat_nvtx: defs.intern(cat::NVTX),
            cat_nvtx_kernel: defs.intern(cat::NVTX_KERNEL),
            cat_cuda_event: defs.intern("cuda_event"),
            cat_launch: defs.intern("cuda_launch"),
            launch: defs.intern("launch"),
            correlation_id: defs.intern("correlation_id"),
            nvtx: defs.intern("nvtx"),
        }
    }
}

pub struct Importer<'c> {
    opts: ImportOptions,
    strings: Strings,
    enums: Enums,
    ids: Identity,
    callchains: Callchains<'c>,
    keys: Keys,
    /// Colours by NVTX name (`--nvtx-color-scheme`), cached.
    colors: FxHashMap<StrId, Option<StrId>>,
    /// Arg keys interned on first use, by the address of the static text (cheaper to hash
    /// than the text, and looked up for every argument of every row).
    arg_keys: FxHashMap<usize, StrId>,
    /// Tables of arg keys read together (a kernel's sixteen), interned on first use and found
    /// by the address and length of the static table: one look-up per row, not per argument.
    key_tables: FxHashMap<(usize, usize), u32>,
    tables: Vec<Box<[StrId]>>,
    /// Enumeration labels interned, by enumeration and value.
    labels: FxHashMap<(Enum, i64), StrId>,
    /// Kernel shapes (`[x,y,z]`), interned.
    shapes: FxHashMap<[i64; 3], StrId>,
    /// The last shape of each kind (grid, block, cluster) and its text: consecutive kernels
    /// mostly share them, and the map look-up was 3% of the merge's thread.
    last_shapes: [Option<([i64; 3], StrId)>; 3],
}

impl<'c> Importer<'c> {
    pub fn new(
        opts: ImportOptions,
        strings: Strings,
        enums: Enums,
        ids: Identity,
        callchains: Callchains<'c>,
        defs: &mut Defs,
    ) -> Importer<'c> {
        Importer {
            opts,
            strings,
            enums,
            ids,
            callchains,
            keys: Keys::new(defs),
            colors: FxHashMap::default(),
            arg_keys: FxHashMap::default(),
            key_tables: FxHashMap::default(),
            tables: Vec::new(),
            labels: FxHashMap::default(),
            shapes: FxHashMap::default(),
            last_shapes: [None; 3],
        }
    }

    /// Names what is left (threads, processes) once every row is read.
    pub fn finish(mut self, defs: &mut Defs) {
        self.ids.finish(defs, &self.strings);
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The activities read (`--activity`).
    pub fn activities(&self) -> Activities {
        self.opts.activities
    }

    pub fn options(&self) -> &ImportOptions {
        &self.opts
    }

    pub fn wants(&self, a: Activity) -> bool {
        self.opts.activities.contains(a)
    }

    /// `--nvtx-prefix`: the prefixes an NVTX range name must start with (none: all).
    pub fn nvtx_prefixes(&self) -> &[String] {
        &self.opts.nvtx_prefixes
    }

    /// The interned arg key `k`.
    pub fn key(&mut self, defs: &mut Defs, k: &'static str) -> StrId {
        *self
            .arg_keys
            .entry(k.as_ptr() as usize)
            .or_insert_with(|| defs.intern(k))
    }

    /// The number of the interned table of `keys`' names, for [`Importer::key_in`].
    pub fn key_table<T>(&mut self, defs: &mut Defs, keys: &'static [(&'static str, T)]) -> u32 {
        let at = (keys.as_ptr() as usize, keys.len());
        if let Some(&n) = self.key_tables.get(&at) {
            return n;
        }
        let ids: Box<[StrId]> = keys.iter().map(|(k, _)| self.key(defs, k)).collect();
        self.tables.push(ids);
        let n = self.tables.len() as u32 - 1;
        self.key_tables.insert(at, n);
        n
    }

    /// Key `i` of table `table`.
    pub fn key_in(&self, table: u32, i: usize) -> StrId {
        self.tables[table as usize][i]
    }

    #[inline]
    pub fn arg(
        &mut self,
        defs: &mut Defs,
        args: &mut Args,
        k: &'static str,
        value: impl FnOnce() -> Value,
    ) {
        let key = self.key(defs, k);
        push_arg(args, key, value);
    }

    /// The text of `StringIds` id `id`.
    pub fn text(&self, id: i64) -> Option<&str> {
        self.strings.get(id)
    }

    /// `StringIds` id `id` interned, for a value that repeats (a kernel's mangled name).
    pub fn text_sym(&mut self, defs: &mut Defs, id: i64) -> Option<StrId> {
        self.strings.intern(defs, id)
    }

    /// A name from `StringIds`, or "[string N]" (counted) when the id is unknown.
    pub fn name(
        &mut self,
        defs: &mut Defs,
        diag: &mut Diagnostics,
        id: i64,
        at: impl FnOnce() -> Location,
    ) -> StrId {
        match self.strings.intern(defs, id) {
            Some(s) => s,
            None => {
                diag.record(&d::UNKNOWN_STRING, at());
                defs.intern(&format!("[string {id}]"))
            }
        }
    }

    /// The label of value `n` of enumeration `e`, or the number, interned.
    pub fn label(&mut self, defs: &mut Defs, e: Enum, n: i64) -> StrId {
        *self
            .labels
            .entry((e, n))
            .or_insert_with(|| defs.intern(&self.enums.label_or_number(e, n)))
    }

    /// A grid, block or cluster shape as the JSON text `[x,y,z]`, interned: shapes repeat, so
    /// no text is made per kernel (and freed by the writer's thread).
    /// `kind`: 0 for a grid, 1 a block, 2 a cluster.
    ///
    /// Inline, so that the shape just read stays in registers: passed in memory, it was
    /// compared by wide loads waiting on the narrow stores that had just made it (two thirds
    /// of a kernel row's own arguments).
    #[inline]
    pub fn shape(&mut self, defs: &mut Defs, kind: usize, d: [i64; 3]) -> StrId {
        if let Some((last, id)) = self.last_shapes[kind] {
            // compared part by part: `==` on the arrays became one wide compare of memory
            if (last[0] ^ d[0]) | (last[1] ^ d[1]) | (last[2] ^ d[2]) == 0 {
                return id;
            }
        }
        self.new_shape(defs, kind, (d[0], d[1], d[2]))
    }

    /// [`Importer::shape`] of a shape other than the last one of its kind (given in registers,
    /// not as an array in memory, for the reason above).
    #[inline(never)]
    fn new_shape(&mut self, defs: &mut Defs, kind: usize, (x, y, z): (i64, i64, i64)) -> StrId {
        let d = [x, y, z];
        let id = *self
            .shapes
            .entry(d)
            .or_insert_with(|| defs.intern(&shape_text(d)));
        self.last_shapes[kind] = Some((d, id));
        id
    }

    /// Reads one argument column as `how` says and appends it to `args` under `key(..)`, asked
    /// for after the value (so strings are interned in the order they always were); NULL
    /// appends nothing. Arguments never fail a row: a value of an unexpected type is shown as
    /// it is. Each arm appends its own value ([`push_arg`]).
    #[inline]
    pub fn arg_column(
        &mut self,
        defs: &mut Defs,
        c: &mut Cols,
        how: How,
        args: &mut Args,
        key: impl FnOnce(&mut Self, &mut Defs) -> StrId,
    ) {
        let Some(cell) = c.next_packed() else {
            return;
        };
        match (how, cell) {
            (How::Str, Packed::Int(id)) => match self.strings.intern(defs, id) {
                Some(s) => {
                    let key = key(self, defs);
                    push_arg(args, key, || Value::Sym(s))
                }
                None => {
                    let key = key(self, defs);
                    push_arg(args, key, || Value::Int(id))
                }
            },
            (How::Enum(e), Packed::Int(n)) => {
                let label = self.label(defs, e, n);
                let key = key(self, defs);
                push_arg(args, key, || Value::Sym(label))
            }
            (_, Packed::Int(n)) => {
                let key = key(self, defs);
                push_arg(args, key, || Value::Int(n))
            }
            // NULL (nothing), REAL, text and blobs, as they are
            (_, cell) => c.push_cell(cell, args, || key(self, defs)),
        }
    }

    /// The colour `--nvtx-color-scheme` gives `name`.
    pub fn color_of(&mut self, defs: &mut Defs, name: StrId) -> Option<StrId> {
        if self.opts.nvtx_colors.is_empty() {
            return None;
        }
        if let Some(c) = self.colors.get(&name) {
            return *c;
        }
        let c = self
            .opts
            .nvtx_colors
            .color_of(defs.str(name))
            .map(str::to_string)
            .map(|c| defs.intern(&c));
        self.colors.insert(name, c);
        c
    }

    /// `end - start` as a duration: `None` for an open range; a negative one is clamped to 0,
    /// counted, and kept in an arg.
    pub fn duration(
        &mut self,
        defs: &mut Defs,
        diag: &mut Diagnostics,
        (start, end): (i64, Option<i64>),
        args: &mut Args,
        at: impl FnOnce() -> Location,
    ) -> Option<i64> {
        let end = match end {
            Some(e) => e,
            None => {
                diag.record(&ir_kinds::OPEN_SLICE, at());
                return None;
            }
        };
        let dur = end.saturating_sub(start);
        if dur < 0 {
            diag.record(&ir_kinds::SLICE_NEGATIVE_DURATION, at());
            self.arg(defs, args, "tracex_original_dur_ns", || Value::Int(dur));
            return Some(0);
        }
        Some(dur)
    }

    /// The thread track of a globalTid.
    pub fn thread(&mut self, defs: &mut Defs, gtid: i64) -> TrackId {
        self.ids.thread(defs, &self.strings, gtid)
    }

    /// The host process of a globalPid or globalTid.
    pub fn process(&mut self, defs: &mut Defs, g: GlobalId) -> ProcessId {
        self.ids.process(defs, g)
    }

    /// The process that stands for GPU `device` of `machine`.
    pub fn device(&mut self, defs: &mut Defs, machine: i64, device: i64) -> ProcessId {
        self.ids.device(defs, machine, device)
    }

    /// The track of one CUDA stream of host process `gpid` on `device`.
    pub fn stream(
        &mut self,
        defs: &mut Defs,
        gpid: GlobalId,
        device: i64,
        (context, stream): (i64, i64),
    ) -> TrackId {
        self.ids.stream(defs, gpid, device, context, stream)
    }

    /// The process-wide track of `p`.
    pub fn process_track(&mut self, defs: &mut Defs, p: ProcessId) -> TrackId {
        self.ids.process_track(defs, p)
    }

    /// The async track `name` of `p`.
    pub fn async_track(&mut self, defs: &mut Defs, p: ProcessId, name: StrId) -> TrackId {
        self.ids.async_track(defs, p, name)
    }

    /// Whether the file has callchains of kind `c`.
    pub fn has_chain(&self, c: Chain) -> bool {
        self.callchains.has(c)
    }

    /// The stack of callchain `id` of kind `c`.
    pub fn stack(&mut self, defs: &mut Defs, c: Chain, id: i64) -> Result<Option<StackId>> {
        self.callchains.stack(c, id, &mut self.strings, defs)
    }
}

/// `[x,y,z]`, written into one buffer (`format!` was 4% of an nsys import's CPU time when this
/// ran three times per kernel).
fn shape_text([x, y, z]: [i64; 3]) -> String {
    let mut s = Vec::with_capacity(32);
    for (sep, n) in [(b'[', x), (b',', y), (b',', z)] {
        s.push(sep);
        tracex_ir::decimal::push_i64(&mut s, n);
    }
    s.push(b']');
    String::from_utf8(s).expect("digits, signs and punctuation are ASCII")
}
