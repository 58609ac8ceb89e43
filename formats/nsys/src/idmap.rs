//! `u32` values by an integer key that is mostly a counter (correlation ids, rowids): an array
//! over the keys' span when they fill enough of it, a hash map when they are sparse.

use rustc_hash::FxHashMap;

pub struct IdMap {
    min: i64,
    /// Value by `key - min`, `u32::MAX` for none; empty when the keys are sparse.
    dense: Vec<u32>,
    sparse: FxHashMap<i64, u32>,
}

impl IdMap {
    /// The map of `entries` (keys distinct, values below `u32::MAX`); an array when the keys'
    /// span is at most `slack` times their number, plus 1024.
    pub fn new(entries: impl Iterator<Item = (i64, u32)> + Clone, slack: u128) -> IdMap {
        let (mut n, mut min, mut max) = (0u128, i64::MAX, i64::MIN);
        for (k, _) in entries.clone() {
            (n, min, max) = (n + 1, min.min(k), max.max(k));
        }
        let span = match n {
            0 => 0,
            _ => (max as i128 - min as i128 + 1) as u128,
        };
        let mut map = IdMap {
            min,
            dense: Vec::new(),
            sparse: FxHashMap::default(),
        };
        if span <= slack * n + 1024 {
            map.dense = vec![u32::MAX; span as usize];
            for (k, v) in entries {
                map.dense[(k - min) as usize] = v;
            }
        } else {
            map.sparse = entries.collect();
        }
        map
    }

    pub fn get(&self, key: i64) -> Option<u32> {
        if self.dense.is_empty() {
            return self.sparse.get(&key).copied();
        }
        let i = usize::try_from(key.checked_sub(self.min)?).ok()?;
        self.dense.get(i).copied().filter(|&v| v != u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_sparse_keys() {
        let dense = IdMap::new([(5, 0), (3, 1), (4, 2)].into_iter(), 2);
        assert!(!dense.dense.is_empty());
        assert_eq!(
            (
                dense.get(3),
                dense.get(4),
                dense.get(5),
                dense.get(6),
                dense.get(2)
            ),
            (Some(1), Some(2), Some(0), None, None)
        );
        let sparse = IdMap::new([(1 << 40, 0), (7, 1), (-3, 2)].into_iter(), 4);
        assert!(sparse.dense.is_empty());
        assert_eq!(
            (
                sparse.get(7),
                sparse.get(-3),
                sparse.get(1 << 40),
                sparse.get(8)
            ),
            (Some(1), Some(2), Some(0), None)
        );
        let empty = IdMap::new(std::iter::empty(), 2);
        assert_eq!((empty.get(0), empty.get(i64::MIN)), (None, None));
    }
}
