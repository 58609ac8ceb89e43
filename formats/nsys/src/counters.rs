//! Counters: GPU metrics (`GPU_METRICS`, one series per metric and GPU, named through
//! `TARGET_INFO_GPU_METRICS` because metric ids are not stable), and the CUDA memory each
//! process holds on each GPU (running total of `CUDA_GPU_MEMORY_USAGE_EVENTS`).

use rustc_hash::FxHashMap;
use tracex_ir::{CounterDef, CounterId, CounterValue, Defs, Diagnostics, Event, Num, Result};

use crate::db::{lenient_rows, rowid, BadValue, Cols, Row};
use crate::decoded::{Decoded, Hook, Skip};
use crate::diag::row_at;
use crate::identity::GlobalId;
use crate::importer::Importer;
use crate::options::Activity;
use crate::plan::{Kind, Query, Setup, StreamDef};

/// Kinds of series in [`Counters::series`] keys: (kind, a, b).
const METRIC: u8 = 0;
const MEMORY: u8 = 1;

/// The counter series made so far and what they are made from.
#[derive(Debug, Default)]
pub struct Counters {
    /// Series by (kind, a, b): (METRIC, typeId, metricId) or (MEMORY, process key, device).
    series: FxHashMap<(u8, i64, i64), CounterId>,
    /// Running totals of CUDA memory per (host process key, device).
    memory_totals: FxHashMap<(i64, i64), i64>,
    /// Metric names by (typeId, metricId).
    metric_names: FxHashMap<(i64, i64), String>,
}

/// The counter streams; the metric names they need.
pub fn plans(setup: &mut Setup, imp: &Importer) -> Result<Counters> {
    let mut counters = Counters::default();
    let acts = imp.activities();
    let metrics = ["timestamp", "typeId", "metricId", "value"];
    let what = (Activity::Metrics, "GPU_METRICS");
    if let Some(t) = setup.wanted(acts, what, &metrics)? {
        if let Some(info) = setup.schema.table("TARGET_INFO_GPU_METRICS") {
            let sql = format!(
                "SELECT {} FROM {}",
                info.select_list(&["typeId", "metricId", "metricName"]),
                info.sql_name()
            );
            let names = lenient_rows(setup.conn, &sql, |r| {
                Ok((r.get::<_, Option<i64>>(0)?, r.get(1)?, r.get(2)?))
            });
            for (ty, m, n) in names {
                if let (Some(ty), Some(m), Some(n)) = (ty, m, n) {
                    counters.metric_names.insert((ty, m), n);
                }
            }
        }
        let query = Query::columns_by_time(&t, "timestamp", &metrics);
        setup
            .streams
            .push(StreamDef::new(&t, query, Kind::GpuMetric));
    }
    let usage = ["start", "globalPid", "deviceId", "bytes"];
    let what = (Activity::Memory, "CUDA_GPU_MEMORY_USAGE_EVENTS");
    if let Some(t) = setup.wanted(acts, what, &usage)? {
        let cols = [&usage[..], &["memoryOperationType"]].concat();
        let query = Query::columns_by_time(&t, "start", &cols);
        setup
            .streams
            .push(StreamDef::new(&t, query, Kind::MemoryUsage));
    }
    Ok(counters)
}

impl Counters {
    /// A GPU metric sample.
    pub fn decode_gpu_metric(
        &mut self,
        imp: &mut Importer,
        table: &str,
        row: &Row,
        (defs, diag): (&mut Defs, &mut Diagnostics),
    ) -> Decoded {
        let rid = rowid(row);
        let mut c = Cols::new(row);
        let ts = c.int("timestamp")?;
        let ty = c.int("typeId")?;
        let metric = c.int("metricId")?;
        let value = match c.raw() {
            Some(tracex_ir::Value::Int(i)) => Num::Int(i),
            Some(tracex_ir::Value::Float(f)) => Num::Float(f),
            _ => {
                return Err(Skip::Bad(BadValue {
                    column: "value",
                    found: "a value that is not a number".into(),
                    wanted: "a number",
                }))
            }
        };
        let counter = match self.series.get(&(METRIC, ty, metric)) {
            Some(&c) => c,
            None => {
                let name = match self.metric_names.get(&(ty, metric)) {
                    Some(n) => defs.intern(n),
                    None => {
                        diag.record(&crate::diag::UNKNOWN_METRIC, row_at(table, rid)());
                        defs.intern(&format!("metric {metric}"))
                    }
                };
                // The GPU is the low byte of typeId.
                let device = imp.device(defs, 1, ty & 0xFF);
                let cat = defs.intern("gpu_metrics");
                let id = defs.add_counter(CounterDef {
                    process: Some(device),
                    name,
                    series: None,
                    label: None,
                    unit: None,
                    cat: Some(cat),
                });
                self.series.insert((METRIC, ty, metric), id);
                id
            }
        };
        Ok(Some((
            Event::Counter(CounterValue { counter, ts, value }),
            Hook::None,
        )))
    }

    /// A CUDA memory allocation or release: the new total of its process on its GPU.
    pub fn decode_memory_usage(
        &mut self,
        imp: &mut Importer,
        row: &Row,
        defs: &mut Defs,
    ) -> Decoded {
        let mut c = Cols::new(row);
        let ts = c.int("start")?;
        let Some(gpid) = c.opt_int("globalPid")? else {
            return Err(Skip::NoId("globalPid"));
        };
        let device = c.int("deviceId")?;
        let bytes = c.int("bytes")?;
        let op = c.opt_int("memoryOperationType")?;
        let g = GlobalId(gpid);
        let counter = match self.series.get(&(MEMORY, g.process_key(), device)) {
            Some(&c) => c,
            None => {
                let dev = imp.device(defs, g.machine(), device);
                let name = defs.intern("CUDA memory allocated");
                let series = defs.intern(&format!("pid {}", g.pid()));
                let unit = defs.intern("bytes");
                let cat = defs.intern("cuda_memory");
                let id = defs.add_counter(CounterDef {
                    process: Some(dev),
                    name,
                    series: Some(series),
                    label: None,
                    unit: Some(unit),
                    cat: Some(cat),
                });
                self.series.insert((MEMORY, g.process_key(), device), id);
                id
            }
        };
        let total = self
            .memory_totals
            .entry((g.process_key(), device))
            .or_insert(0);
        // Operation 1 is a deallocation (ENUM_CUDA_DEV_MEM_EVENT_OPER).
        if op == Some(1) {
            *total = total.saturating_sub(bytes);
        } else {
            *total = total.saturating_add(bytes);
        }
        Ok(Some((
            Event::Counter(CounterValue {
                counter,
                ts,
                value: Num::Int(*total),
            }),
            Hook::None,
        )))
    }
}
