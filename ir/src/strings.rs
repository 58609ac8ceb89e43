//! Interned strings: names, categories, argument keys and frame labels are stored once and
//! referred to by [`StrId`]. Argument *values* are not interned (see `docs/ir.md`).

use indexmap::IndexSet;
use rustc_hash::FxBuildHasher;

/// Index of an interned string in one [`Interner`]; valid only for the [`crate::Defs`] it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StrId(pub u32);

impl StrId {
    /// The empty string, always interned first.
    pub const EMPTY: StrId = StrId(0);
}

/// A string table: each distinct string is stored once.
#[derive(Debug, Clone)]
pub struct Interner {
    set: IndexSet<Box<str>, FxBuildHasher>,
}

impl Default for Interner {
    fn default() -> Self {
        let mut set = IndexSet::with_hasher(FxBuildHasher);
        set.insert(Box::from(""));
        Interner { set }
    }
}

impl Interner {
    /// Returns the id of `s`, adding it on first use.
    pub fn intern(&mut self, s: &str) -> StrId {
        if let Some(i) = self.set.get_index_of(s) {
            return StrId(i as u32);
        }
        let (i, _) = self.set.insert_full(Box::from(s));
        StrId(i as u32)
    }

    /// The id of `s` if it was interned.
    pub fn lookup(&self, s: &str) -> Option<StrId> {
        self.set.get_index_of(s).map(|i| StrId(i as u32))
    }

    /// The text of `id`. Panics on an id from another table (a programming error).
    pub fn get(&self, id: StrId) -> &str {
        &self.set[id.0 as usize]
    }

    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.len() <= 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_dedups() {
        let mut i = Interner::default();
        assert_eq!(i.intern(""), StrId::EMPTY);
        let a = i.intern("kernel");
        let b = i.intern("memcpy");
        assert_ne!(a, b);
        assert_eq!(i.intern("kernel"), a);
        assert_eq!(i.get(b), "memcpy");
        assert_eq!(i.lookup("memcpy"), Some(b));
        assert_eq!(i.lookup("nope"), None);
    }
}
