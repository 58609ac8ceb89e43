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
    /// The id last interned in each slot of [`slot`]: an importer interns the same few names
    /// and argument keys for every event, and a hit costs a comparison with the stored string
    /// instead of hashing all of it and probing the table (interning was an eighth of the
    /// Chrome importer's thread).
    recent: Box<[u32; RECENT]>,
}

/// Slots of [`Interner::recent`].
const RECENT: usize = 1024;

/// The slot of `s` in [`Interner::recent`], from its length and first and last eight bytes.
#[inline]
fn slot(s: &str) -> usize {
    let b = s.as_bytes();
    let word = |w: &[u8]| {
        let mut x = [0u8; 8];
        x[..w.len()].copy_from_slice(w);
        u64::from_le_bytes(x)
    };
    let (head, tail) = match b.len() {
        0..=8 => (word(b), 0),
        n => (word(&b[..8]), word(&b[n - 8..])),
    };
    let h = (head ^ tail.rotate_left(29) ^ b.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 54) as usize
}

impl Default for Interner {
    fn default() -> Self {
        let mut set = IndexSet::with_hasher(FxBuildHasher);
        set.insert(Box::from(""));
        Interner {
            set,
            recent: Box::new([0; RECENT]),
        }
    }
}

impl Interner {
    /// Returns the id of `s`, adding it on first use.
    #[inline]
    pub fn intern(&mut self, s: &str) -> StrId {
        let at = slot(s);
        let last = self.recent[at];
        if *self.set[last as usize] == *s {
            return StrId(last);
        }
        let id = self.intern_slow(s);
        self.recent[at] = id.0;
        id
    }

    /// Kept out of line, so that a hit of [`Interner::intern`] stays small.
    #[cold]
    #[inline(never)]
    fn intern_slow(&mut self, s: &str) -> StrId {
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

    /// Strings that share a slot of the recent ids, or were evicted from it, still intern to
    /// their own ids.
    #[test]
    fn recent_ids_never_answer_for_another_string() {
        let mut i = Interner::default();
        let words: Vec<String> = (0..5000)
            .map(|n| match n % 4 {
                0 => format!("k{n}"),
                1 => format!("a long name that ends in {n}"),
                2 => format!("{n} starts a long name that ends the same"),
                _ => "x".repeat(n % 40),
            })
            .collect();
        let ids: Vec<StrId> = words.iter().map(|w| i.intern(w)).collect();
        for _ in 0..2 {
            for (w, &id) in words.iter().zip(&ids).rev() {
                assert_eq!(i.intern(w), id);
                assert_eq!(i.get(id), w);
            }
        }
        // two words of one slot, interned in turn: each evicts the other and keeps its id
        let mut first_of_slot = std::collections::HashMap::new();
        let (a, b) = words
            .iter()
            .find_map(|w| {
                let other = *first_of_slot.entry(slot(w)).or_insert(w);
                (other != w).then_some((other, w))
            })
            .expect("more words than slots");
        let (id_a, id_b) = (i.intern(a), i.intern(b));
        assert_ne!(id_a, id_b);
        for _ in 0..3 {
            assert_eq!((i.intern(a), i.intern(b)), (id_a, id_b));
        }
        assert_eq!(i.intern(""), StrId::EMPTY);
    }
}
