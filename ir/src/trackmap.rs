//! [`TrackMap`]: a value per track, in a vector indexed by the track's number. Track ids count
//! from 0 in the order tracks are defined, so the stages that keep state per track (the overlap
//! router's lanes, the flow binder's open slices) find it by an index instead of a hash (a
//! look-up per event, a few percent of a conversion's main thread as a hash map).

use crate::model::TrackId;

#[derive(Debug, Clone)]
pub struct TrackMap<V> {
    values: Vec<Option<V>>,
}

impl<V> Default for TrackMap<V> {
    fn default() -> Self {
        TrackMap { values: Vec::new() }
    }
}

impl<V> TrackMap<V> {
    pub fn get(&self, t: TrackId) -> Option<&V> {
        self.values.get(t.index())?.as_ref()
    }

    pub fn get_mut(&mut self, t: TrackId) -> Option<&mut V> {
        self.values.get_mut(t.index())?.as_mut()
    }

    /// The value of `t`, made by `make` when there is none yet.
    pub fn get_or_insert_with(&mut self, t: TrackId, make: impl FnOnce() -> V) -> &mut V {
        let i = t.index();
        if i >= self.values.len() {
            self.values.resize_with(i + 1, || None);
        }
        self.values[i].get_or_insert_with(make)
    }

    pub fn remove(&mut self, t: TrackId) -> Option<V> {
        self.values.get_mut(t.index())?.take()
    }

    pub fn clear(&mut self) {
        self.values.clear();
    }

    /// Whether `t` has a value.
    pub fn contains(&self, t: TrackId) -> bool {
        self.get(t).is_some()
    }

    /// Sets the value of `t`.
    pub fn insert(&mut self, t: TrackId, v: V) {
        let i = t.index();
        if i >= self.values.len() {
            self.values.resize_with(i + 1, || None);
        }
        self.values[i] = Some(v);
    }

    /// The tracks with a value and their values, in track order.
    pub fn iter(&self) -> impl Iterator<Item = (TrackId, &V)> {
        (self.values.iter().enumerate()).filter_map(|(i, v)| Some((TrackId(i as u32), v.as_ref()?)))
    }
}

impl<V: Default> TrackMap<V> {
    pub fn get_or_default(&mut self, t: TrackId) -> &mut V {
        self.get_or_insert_with(t, V::default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_by_track() {
        let mut m: TrackMap<Vec<u32>> = TrackMap::default();
        assert!(m.get(TrackId(3)).is_none());
        m.get_or_default(TrackId(3)).push(1);
        m.get_or_default(TrackId(3)).push(2);
        m.get_or_default(TrackId(0)).push(7);
        assert_eq!(m.get(TrackId(3)), Some(&vec![1, 2]));
        assert_eq!(m.get(TrackId(1)), None);
        assert_eq!(m.remove(TrackId(3)), Some(vec![1, 2]));
        assert_eq!(m.get(TrackId(3)), None);
        assert_eq!(m.remove(TrackId(99)), None);
        m.get_mut(TrackId(0)).unwrap().push(8);
        assert_eq!(m.get(TrackId(0)), Some(&vec![7, 8]));
        m.insert(TrackId(5), vec![5]);
        assert!(m.contains(TrackId(5)) && !m.contains(TrackId(4)));
        let all: Vec<(TrackId, &Vec<u32>)> = m.iter().collect();
        assert_eq!(all, vec![(TrackId(0), &vec![7, 8]), (TrackId(5), &vec![5])]);
    }
}
