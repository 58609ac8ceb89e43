//! The archive's string definitions, written as soon as a string is first needed (libotf2
//! flushes them to the global definitions file like event chunks), so that definitions written
//! at the end only refer to strings already written.
//!
//! Names and keys are interned for the whole conversion (their number does not grow with the
//! trace). String argument values go through a bounded cache: repeated values share a
//! definition, and memory stays bounded however many distinct values a trace has.

use std::ffi::CString;

use otf2_sys::OTF2_StringRef;
use rustc_hash::FxHashMap;
use tracex_ir::StrId;

use crate::ffi::{ArchiveWriter, Result};

/// Distinct argument values remembered before the cache starts over.
const VALUE_CACHE: usize = 1 << 16;

#[derive(Default)]
pub struct Strings {
    names: FxHashMap<Box<str>, OTF2_StringRef>,
    by_id: Vec<Option<OTF2_StringRef>>,
    values: FxHashMap<Box<str>, OTF2_StringRef>,
    next: u32,
    /// Strings in which a NUL byte (which OTF2 strings cannot hold) was replaced.
    pub nul_replaced: u64,
}

impl Strings {
    fn write(&mut self, ar: &mut ArchiveWriter, s: &str) -> Result<OTF2_StringRef> {
        let c = match CString::new(s) {
            Ok(c) => c,
            Err(_) => {
                self.nul_replaced += 1;
                CString::new(s.replace('\0', "\u{FFFD}")).expect("NUL replaced")
            }
        };
        let r = OTF2_StringRef(self.next);
        self.next += 1;
        ar.global_defs()?.string(r, &c)?;
        Ok(r)
    }

    /// A name, key or other text that recurs.
    pub fn name(&mut self, ar: &mut ArchiveWriter, s: &str) -> Result<OTF2_StringRef> {
        if let Some(&r) = self.names.get(s) {
            return Ok(r);
        }
        let r = self.write(ar, s)?;
        self.names.insert(s.into(), r);
        Ok(r)
    }

    /// An interned IR string (names, categories, argument keys).
    pub fn id(
        &mut self,
        ar: &mut ArchiveWriter,
        defs_str: &str,
        id: StrId,
    ) -> Result<OTF2_StringRef> {
        let i = id.0 as usize;
        if let Some(Some(r)) = self.by_id.get(i) {
            return Ok(*r);
        }
        let r = self.name(ar, defs_str)?;
        if i >= self.by_id.len() {
            self.by_id.resize(i + 1, None);
        }
        self.by_id[i] = Some(r);
        Ok(r)
    }

    /// An argument value: possibly unique, so only cached boundedly.
    pub fn value(&mut self, ar: &mut ArchiveWriter, s: &str) -> Result<OTF2_StringRef> {
        if let Some(&r) = self.names.get(s).or_else(|| self.values.get(s)) {
            return Ok(r);
        }
        let r = self.write(ar, s)?;
        if self.values.len() >= VALUE_CACHE {
            self.values.clear();
        }
        self.values.insert(s.into(), r);
        Ok(r)
    }
}
