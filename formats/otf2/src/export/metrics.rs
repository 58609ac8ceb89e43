//! Counters → metrics: one metric member and one metric class per IR counter, recorded on the
//! counter's own METRIC location, or on a track's location when the exporter was told so (the
//! memory profile's allocator locations); each value is one Metric event typed INT64 or DOUBLE
//! as the IR value is. A member's declared type is INT64 when every value was an integer, else
//! DOUBLE. The IR counter is kept as a `TRACEX_COUNTER_<metric>` property of its location.

use otf2_sys as sys;
use rustc_hash::FxHashMap;
use tracex_ir::{CounterId, CounterValue, Defs, Num, TrackId};

use super::locations::{counter_display_name, Locations};
use super::props::{self, Owner};
use super::strings::Strings;
use crate::ffi::{ArchiveWriter, AttrList, Result};
use crate::identity;

const SEEN_INT: u8 = 1;
const SEEN_FLOAT: u8 = 2;

struct Metric {
    counter: CounterId,
    loc: u32,
    seen: u8,
}

#[derive(Default)]
pub struct Metrics {
    by_counter: FxHashMap<CounterId, u32>,
    list: Vec<Metric>,
    /// Counters recorded on a track's location instead of their own.
    pub on_track: FxHashMap<CounterId, TrackId>,
}

impl Metrics {
    /// Writes one counter value at tick `t`.
    pub fn value(
        &mut self,
        ar: &mut ArchiveWriter,
        locs: &mut Locations,
        defs: &Defs,
        list: &mut AttrList,
        v: &CounterValue,
        t: u64,
    ) -> Result<u32> {
        let m = match self.by_counter.get(&v.counter) {
            Some(&m) => m,
            None => {
                let loc = match self.on_track.get(&v.counter) {
                    Some(&t) => locs.track(ar, defs, t)?,
                    None => locs.counter(ar, defs, v.counter)?,
                };
                self.list.push(Metric {
                    counter: v.counter,
                    loc,
                    seen: 0,
                });
                let m = self.list.len() as u32 - 1;
                self.by_counter.insert(v.counter, m);
                m
            }
        };
        let metric = &mut self.list[m as usize];
        let mut value = sys::OTF2_MetricValue::default();
        let ty = match v.value {
            Num::Int(i) => {
                metric.seen |= SEEN_INT;
                value.signed_int = i;
                sys::OTF2_TYPE_INT64
            }
            Num::Float(f) => {
                metric.seen |= SEEN_FLOAT;
                value.floating_point = f;
                sys::OTF2_TYPE_DOUBLE
            }
        } as sys::OTF2_Type;
        let loc = metric.loc;
        ar.evt_writer(loc as u64)?
            .metric(list, t, sys::OTF2_MetricRef(m), &[ty], &[value])?;
        Ok(loc)
    }

    /// Metric members, classes and their recorders.
    pub fn write_defs(
        &self,
        ar: &mut ArchiveWriter,
        strings: &mut Strings,
        defs: &Defs,
    ) -> Result<()> {
        let empty = strings.name(ar, "")?;
        for (i, m) in self.list.iter().enumerate() {
            let c = defs.counter(m.counter);
            let name = strings.name(ar, &counter_display_name(defs, c))?;
            let unit = match c.unit {
                Some(u) => strings.id(ar, defs.str(u), u)?,
                None => empty,
            };
            let ty = if m.seen & SEEN_FLOAT != 0 {
                sys::OTF2_TYPE_DOUBLE
            } else {
                sys::OTF2_TYPE_INT64
            };
            let g = ar.global_defs()?;
            let r = sys::OTF2_MetricMemberRef(i as u32);
            g.metric_member(
                r,
                name,
                empty,
                sys::OTF2_METRIC_ABSOLUTE_POINT,
                ty as u8,
                unit,
            )?;
            g.metric_class(sys::OTF2_MetricRef(i as u32), &[r])?;
            g.metric_class_recorder(
                sys::OTF2_MetricRef(i as u32),
                sys::OTF2_LocationRef(m.loc as u64),
            )?;
            let name = format!("{}_{i}", identity::COUNTER_PROPERTY);
            let json = identity::counter_json(defs, m.counter.0, c);
            props::write(ar, strings, Owner::Location(m.loc as u64), &name, &json)?;
        }
        Ok(())
    }
}
