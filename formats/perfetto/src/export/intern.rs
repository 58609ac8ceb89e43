//! Interning: names, categories, annotation keys, frames, callstacks and sample contexts are
//! written once per trace in `InternedData` and referred to by iid (each kind has its own iid
//! space, starting at 1). New entries gather in `pending` and go out with the next packet that
//! is queued, which is always before any packet that refers to them.

use rustc_hash::FxHashMap;
use tracex_ir::{Defs, FrameId, StackId, StrId};

use crate::pb::stack_sample::{counter_descriptor::UnitField, CounterDescriptor};
use crate::pb::stack_sample::{ExecutionContext, TaskContext};
use crate::pb::{
    Callstack, DebugAnnotationName, EventCategory, EventName, Frame, InternedData, InternedString,
    Mapping,
};

/// Distinct argument string values interned at most (then new ones stay inline).
pub const MAX_VALUES: usize = 1 << 16;
/// Distinct JSON argument texts whose encoding is kept.
const MAX_JSON: usize = 1 << 12;

/// One iid space: value → iid.
struct Table<K> {
    ids: FxHashMap<K, u64>,
}

impl<K: std::hash::Hash + Eq> Default for Table<K> {
    fn default() -> Self {
        Table {
            ids: FxHashMap::default(),
        }
    }
}

impl<K: std::hash::Hash + Eq> Table<K> {
    /// The iid of `k`, and whether it is new.
    fn get(&mut self, k: K) -> (u64, bool) {
        let next = self.ids.len() as u64 + 1;
        let mut new = false;
        let id = *self.ids.entry(k).or_insert_with(|| {
            new = true;
            next
        });
        (id, new)
    }
}

/// One iid space of interned strings, by `StrId`: ids are dense, so a vector indexed by them
/// (0: not yet given an iid) finds an iid in a few instructions, where a hash map lookup took
/// a fifth of the encoding of an event's arguments (callgrind, nsys 250k → `.pftrace`).
#[derive(Default)]
struct Strs {
    iids: Vec<u64>,
    len: usize,
}

impl Strs {
    /// The iid of `s`, and whether it is new.
    fn get(&mut self, s: StrId) -> (u64, bool) {
        self.get_or(s, self.len as u64 + 1)
    }

    /// The iid of `s`, `next` if it is new; and whether it is.
    fn get_or(&mut self, s: StrId, next: u64) -> (u64, bool) {
        let i = s.0 as usize;
        match self.iids.get(i) {
            Some(&iid) if iid != 0 => return (iid, false),
            Some(_) => {}
            None => self.iids.resize(i + 1, 0),
        }
        self.len += 1;
        self.iids[i] = next;
        (next, true)
    }
}

#[derive(Default)]
pub struct Interner {
    names: Strs,
    cats: Strs,
    keys: Strs,
    /// Keys of nested JSON objects (no `StrId`): the same iid space as `keys`.
    key_texts: FxHashMap<Box<str>, u64>,
    functions: Strs,
    paths: Strs,
    mappings: Strs,
    frames: Table<FrameId>,
    callstacks: Table<StackId>,
    tasks: Table<(u32, u32)>,
    cpus: Table<u32>,
    counters: Table<Option<StrId>>,
    /// Argument string values (kernel names repeat on every kernel), up to a bound, shared
    /// by owned texts (`values`) and interned ones (`syms`, an iid or 0 by `StrId`).
    values: FxHashMap<Box<str>, u64>,
    syms: Vec<u64>,
    /// Entries of `values` and `syms`.
    value_count: usize,
    /// JSON argument texts already encoded (grid sizes repeat), up to a bound.
    /// JSON argument text → its annotation encoded without its name (see [`Interner::json`]).
    json: FxHashMap<Box<str>, Vec<u8>>,
    /// The same for interned JSON texts, indexed by `StrId` (as [`Strs`]).
    json_syms: Vec<Option<Box<[u8]>>>,
    pending: InternedData,
    pending_any: bool,
}

impl Interner {
    /// Definitions made since the last call, for the packet about to be queued.
    pub fn take(&mut self) -> Option<Box<InternedData>> {
        if !self.pending_any {
            return None;
        }
        self.pending_any = false;
        Some(Box::new(std::mem::take(&mut self.pending)))
    }

    pub fn name(&mut self, defs: &Defs, s: StrId) -> u64 {
        let (iid, new) = self.names.get(s);
        if new {
            self.pending_any = true;
            self.pending.event_names.push(EventName {
                iid: Some(iid),
                name: Some(defs.str(s).to_owned()),
            });
        }
        iid
    }

    pub fn category(&mut self, defs: &Defs, s: StrId) -> u64 {
        let (iid, new) = self.cats.get(s);
        if new {
            self.pending_any = true;
            self.pending.event_categories.push(EventCategory {
                iid: Some(iid),
                name: Some(defs.str(s).to_owned()),
            });
        }
        iid
    }

    pub fn key(&mut self, defs: &Defs, s: StrId) -> u64 {
        // keys and the texts of nested JSON keys share one iid space
        let (iid, new) = self.keys.get_or(s, self.next_key());
        if new {
            self.pending_any = true;
            self.pending
                .debug_annotation_names
                .push(DebugAnnotationName {
                    iid: Some(iid),
                    name: Some(defs.str(s).to_owned()),
                });
        }
        iid
    }

    fn next_key(&self) -> u64 {
        (self.keys.len + self.key_texts.len()) as u64 + 1
    }

    /// A key of a nested JSON object.
    pub fn key_text(&mut self, k: &str) -> u64 {
        if let Some(&iid) = self.key_texts.get(k) {
            return iid;
        }
        let iid = self.next_key();
        self.key_texts.insert(k.into(), iid);
        self.pending_any = true;
        self.pending
            .debug_annotation_names
            .push(DebugAnnotationName {
                iid: Some(iid),
                name: Some(k.to_owned()),
            });
        iid
    }

    /// The iid of an argument's string value, when worth interning: values shorter than an
    /// iid reference are left inline, and so is every new value once the table holds
    /// [`MAX_VALUES`] (argument values can be unique: ids, addresses).
    pub fn value(&mut self, s: &str) -> Option<u64> {
        if s.len() < 4 {
            return None;
        }
        if let Some(&iid) = self.values.get(s) {
            return Some(iid);
        }
        let iid = self.new_value(s)?;
        self.values.insert(s.into(), iid);
        Some(iid)
    }

    /// [`Interner::value`] of an interned string: looked up by id, not by text.
    pub fn value_sym(&mut self, defs: &Defs, s: StrId) -> Option<u64> {
        let i = s.0 as usize;
        match self.syms.get(i) {
            Some(&iid) if iid != 0 => return Some(iid),
            _ => {}
        }
        let text = defs.str(s);
        if text.len() < 4 {
            return None;
        }
        let iid = self.new_value(text)?;
        if i >= self.syms.len() {
            self.syms.resize(i + 1, 0);
        }
        self.syms[i] = iid;
        Some(iid)
    }

    /// A new string value's iid, queued for the next packet; none once the table is full.
    fn new_value(&mut self, s: &str) -> Option<u64> {
        if self.value_count >= MAX_VALUES {
            return None;
        }
        self.value_count += 1;
        let iid = self.value_count as u64;
        self.pending_any = true;
        self.pending
            .debug_annotation_string_values
            .push(InternedString {
                iid: Some(iid),
                str: Some(s.as_bytes().to_vec()),
            });
        Some(iid)
    }

    /// The annotation of a JSON argument, `encode`d once per distinct text (up to a bound), as
    /// the bytes of its fields but the name, handed to `put`: repeated texts are copied, not
    /// rebuilt.
    pub fn json(
        &mut self,
        text: &str,
        encode: fn(&mut Self, &str) -> Vec<u8>,
        put: impl FnOnce(&[u8]),
    ) {
        if let Some(body) = self.json.get(text) {
            return put(body);
        }
        let body = encode(self, text);
        put(&body);
        if self.json.len() < MAX_JSON {
            self.json.insert(text.into(), body);
        }
    }

    /// [`Interner::json`] of an interned JSON text: found by id, not by text, and kept
    /// whatever the number of texts (`Defs` holds them anyway).
    pub fn json_sym(
        &mut self,
        defs: &Defs,
        s: StrId,
        encode: fn(&mut Self, &str) -> Vec<u8>,
        put: impl FnOnce(&[u8]),
    ) {
        let i = s.0 as usize;
        if let Some(Some(body)) = self.json_syms.get(i) {
            return put(body);
        }
        let body = encode(self, defs.str(s));
        put(&body);
        if i >= self.json_syms.len() {
            self.json_syms.resize(i + 1, None);
        }
        self.json_syms[i] = Some(body.into_boxed_slice());
    }

    fn function(&mut self, defs: &Defs, s: StrId) -> u64 {
        let (iid, new) = self.functions.get(s);
        if new {
            self.pending_any = true;
            self.pending.function_names.push(InternedString {
                iid: Some(iid),
                str: Some(defs.str(s).as_bytes().to_vec()),
            });
        }
        iid
    }

    /// A mapping standing for a module (a library, or a frame category).
    fn mapping(&mut self, defs: &Defs, module: StrId) -> u64 {
        let (iid, new) = self.mappings.get(module);
        if new {
            let (path, new_path) = self.paths.get(module);
            if new_path {
                self.pending.mapping_paths.push(InternedString {
                    iid: Some(path),
                    str: Some(defs.str(module).as_bytes().to_vec()),
                });
            }
            self.pending_any = true;
            self.pending.mappings.push(Mapping {
                iid: Some(iid),
                path_string_ids: vec![path],
            });
        }
        iid
    }

    fn frame(&mut self, defs: &Defs, f: FrameId) -> u64 {
        if let Some(&iid) = self.frames.ids.get(&f) {
            return iid;
        }
        let fr = defs.stacks.frame(f);
        let function = self.function(defs, fr.name);
        // mapping 0: Perfetto's dummy mapping, for frames without a module
        let mapping = fr.module.map(|m| self.mapping(defs, m));
        let (iid, _) = self.frames.get(f);
        self.pending_any = true;
        self.pending.frames.push(Frame {
            iid: Some(iid),
            function_name_id: Some(function),
            mapping_id: mapping,
            ..Default::default()
        });
        iid
    }

    /// The callstack of stack node `s` (its frames root first).
    pub fn callstack(&mut self, defs: &Defs, s: StackId) -> u64 {
        if let Some(&iid) = self.callstacks.ids.get(&s) {
            return iid;
        }
        let frame_ids: Vec<u64> = defs
            .stacks
            .path(s)
            .into_iter()
            .map(|f| self.frame(defs, f))
            .collect();
        let (iid, _) = self.callstacks.get(s);
        self.pending_any = true;
        self.pending.callstacks.push(Callstack {
            iid: Some(iid),
            frame_ids,
        });
        iid
    }

    /// A stack sample's task: the process and thread it is attributed to.
    pub fn task(&mut self, pid: u32, tid: u32) -> u64 {
        let (iid, new) = self.tasks.get((pid, tid));
        if new {
            self.pending_any = true;
            self.pending.stack_sample_task_contexts.push(TaskContext {
                iid: Some(iid),
                pid: Some(pid),
                tid: Some(tid),
            });
        }
        iid
    }

    /// A stack sample's execution context: the CPU it ran on.
    pub fn cpu(&mut self, cpu: u32) -> u64 {
        let (iid, new) = self.cpus.get(cpu);
        if new {
            self.pending_any = true;
            self.pending
                .stack_sample_execution_contexts
                .push(ExecutionContext {
                    iid: Some(iid),
                    cpu: Some(cpu),
                    mode: None,
                });
        }
        iid
    }

    /// The timebase of stack samples named `name` ("cycles", or "samples" for unnamed ones):
    /// each sample's weight counts in its unit.
    pub fn sample_counter(&mut self, defs: &Defs, name: Option<StrId>) -> u64 {
        let (iid, new) = self.counters.get(name);
        if new {
            self.pending_any = true;
            self.pending
                .stack_sample_counter_descriptors
                .push(CounterDescriptor {
                    iid: Some(iid),
                    name: Some(name.map_or("samples", |n| defs.str(n)).to_owned()),
                    unit_field: Some(UnitField::Unit(crate::pb::stack_sample::Unit::Count as i32)),
                });
        }
        iid
    }
}

/// Adds definitions to a queued packet's (it precedes every packet that uses them).
pub fn merge(into: &mut Option<Box<InternedData>>, new: Box<InternedData>) {
    let new = *new;
    let d = into.get_or_insert_with(Default::default);
    d.event_names.extend(new.event_names);
    d.event_categories.extend(new.event_categories);
    d.debug_annotation_names.extend(new.debug_annotation_names);
    d.debug_annotation_string_values
        .extend(new.debug_annotation_string_values);
    d.function_names.extend(new.function_names);
    d.mapping_paths.extend(new.mapping_paths);
    d.mappings.extend(new.mappings);
    d.frames.extend(new.frames);
    d.callstacks.extend(new.callstacks);
    d.stack_sample_task_contexts
        .extend(new.stack_sample_task_contexts);
    d.stack_sample_execution_contexts
        .extend(new.stack_sample_execution_contexts);
    d.stack_sample_counter_descriptors
        .extend(new.stack_sample_counter_descriptors);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Owned and interned string values share one iid space: each new value gets the next iid
    /// and is defined once; short ones stay inline.
    #[test]
    fn owned_and_interned_values_share_iids() {
        let mut defs = Defs::default();
        let sym = defs.intern("volta_sgemm");
        let short = defs.intern("ab");
        let mut i = Interner::default();
        assert_eq!(i.value("Memcpy HtoD"), Some(1));
        assert_eq!(i.value_sym(&defs, sym), Some(2));
        assert_eq!(i.value_sym(&defs, sym), Some(2));
        assert_eq!(i.value("Memcpy HtoD"), Some(1));
        assert_eq!(i.value_sym(&defs, short), None);
        let d = i.take().expect("new values");
        let defined: Vec<_> = d
            .debug_annotation_string_values
            .iter()
            .map(|s| (s.iid, s.str.clone()))
            .collect();
        assert_eq!(
            defined,
            [
                (Some(1), Some(b"Memcpy HtoD".to_vec())),
                (Some(2), Some(b"volta_sgemm".to_vec()))
            ]
        );
        assert!(i.take().is_none());
    }
}
