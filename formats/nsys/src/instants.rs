//! Point events: thread scheduling (`SCHED_EVENTS`) on thread tracks; unified-memory page
//! faults and memory-pool operations on their process's or GPU's process track; nsys's own
//! diagnostics (`DIAGNOSTIC_EVENT`) on the trace-wide track.

use crate::db::Row;
use tracex_ir::{Args, Defs, Result, Value};

use crate::cpu::{ArgCol, How};
use crate::db::Cols;
use crate::enums::Enum;
use crate::identity::GlobalId;
use crate::importer::{Decoded, Importer, Parts, Skip};
use crate::options::Activity;
use crate::plan::{Kind, Query, Setup, StreamDef};

/// Whose track an instant goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The host process of `globalPid`.
    Process,
    /// The GPU `deviceId` (on the machine of `globalPid`).
    Device,
    /// The whole trace.
    Global,
}

#[derive(Debug)]
pub struct InstantTable {
    pub table: &'static str,
    pub activity: Activity,
    pub ts: &'static str,
    pub owner: Owner,
    pub name: &'static str,
    /// A text column whose first line names the instant instead of `name`.
    pub name_from: Option<&'static str>,
    pub cat: &'static str,
    pub args: &'static [ArgCol],
}

const fn a(col: &'static str, key: &'static str, how: How) -> ArgCol {
    ArgCol { col, key, how }
}

pub static INSTANT_TABLES: &[InstantTable] = &[
    InstantTable {
        table: "CUDA_UM_CPU_PAGE_FAULT_EVENTS",
        activity: Activity::Memory,
        ts: "start",
        owner: Owner::Process,
        name: "CPU page fault",
        name_from: None,
        cat: "um_page_fault",
        args: &[
            a("address", "address", How::Int),
            a("originalFaultPc", "fault_pc", How::Int),
            a("CpuInstruction", "function", How::Str),
            a("module", "module", How::Str),
            a("unresolvedFaultPc", "unresolved_fault_pc", How::Int),
        ],
    },
    InstantTable {
        table: "CUDA_UM_GPU_PAGE_FAULT_EVENTS",
        activity: Activity::Memory,
        ts: "start",
        owner: Owner::Device,
        name: "GPU page fault",
        name_from: None,
        cat: "um_page_fault",
        args: &[
            a("end", "end_ns", How::Int),
            a("address", "address", How::Int),
            a("numberOfPageFaults", "faults", How::Int),
            a(
                "faultAccessType",
                "access_type",
                How::Enum(Enum::UnifMemAccess),
            ),
        ],
    },
    InstantTable {
        table: "CUDA_GPU_MEMORY_POOL_EVENTS",
        activity: Activity::Memory,
        ts: "start",
        owner: Owner::Device,
        name: "CUDA memory pool",
        name_from: None,
        cat: "cuda_memory",
        args: &[
            a("address", "address", How::Int),
            a("operationType", "operation", How::Enum(Enum::MemPoolOper)),
            a("poolType", "pool_type", How::Enum(Enum::MemPoolType)),
            a("correlationId", "correlation_id", How::Int),
            a("minBytesToKeep", "min_bytes_to_keep", How::Int),
            a(
                "localMemoryPoolReleaseThreshold",
                "release_threshold",
                How::Int,
            ),
            a("localMemoryPoolSize", "pool_size", How::Int),
            a(
                "localMemoryPoolUtilizedSize",
                "pool_utilized_size",
                How::Int,
            ),
        ],
    },
    InstantTable {
        table: "DIAGNOSTIC_EVENT",
        activity: Activity::Diagnostics,
        ts: "timestamp",
        owner: Owner::Global,
        name: "nsys diagnostic",
        name_from: Some("text"),
        cat: "nsys_diagnostic",
        args: &[
            a("severity", "severity", How::Enum(Enum::DiagSeverity)),
            a("source", "source", How::Int),
            a("timestampType", "timestamp_type", How::Int),
            a("text", "text", How::Raw),
        ],
    },
];

/// The columns an instant table is read by, in this order, then its name column and args.
const CORE: &[&str] = &["globalPid", "deviceId"];

pub fn plans(setup: &mut Setup, imp: &mut Importer) -> Result<()> {
    for spec in INSTANT_TABLES {
        let mut needed = vec![spec.ts];
        match spec.owner {
            Owner::Process => needed.push("globalPid"),
            Owner::Device => needed.extend(["globalPid", "deviceId"]),
            Owner::Global => {}
        }
        let what = (spec.activity, spec.table);
        let Some(t) = setup.wanted(imp.opts.activities, what, &needed)? else {
            continue;
        };
        let mut cols = vec![t.col(spec.ts)];
        cols.extend(CORE.iter().map(|c| t.col(c)));
        cols.push(spec.name_from.map_or("NULL".into(), |c| t.col(c)));
        cols.extend(spec.args.iter().map(|a| t.col(a.col)));
        let query = Query::by_time(
            &t,
            spec.ts,
            format!("SELECT rowid, {} FROM {}", cols.join(", "), t.sql_name()),
        );
        setup
            .streams
            .push(StreamDef::new(&t, query, Kind::Instant(spec)));
    }
    let what = (Activity::Sched, "SCHED_EVENTS");
    let needed = ["start", "globalTid"];
    if let Some(t) = setup.wanted(imp.opts.activities, what, &needed)? {
        let cols = [
            "start",
            "globalTid",
            "cpu",
            "isSchedIn",
            "threadState",
            "threadBlock",
        ];
        let query = Query::columns_by_time(&t, "start", &cols);
        setup.streams.push(StreamDef::new(&t, query, Kind::Sched));
    }
    Ok(())
}

impl Importer<'_> {
    pub fn decode_instant(
        &mut self,
        spec: &InstantTable,
        _table: &str,
        row: &Row,
        defs: &mut Defs,
    ) -> Decoded {
        let mut c = Cols::new(row);
        let ts = c.int(spec.ts)?;
        let gpid = c.opt_int("globalPid")?;
        let device = c.opt_int("deviceId")?;
        let text = c.opt_text();
        let track = match (spec.owner, gpid, device) {
            (Owner::Global, _, _) => defs.global_track(),
            (Owner::Process, Some(g), _) => {
                let p = self.ids.process(defs, GlobalId(g));
                self.ids.process_track(defs, p)
            }
            (Owner::Device, Some(g), Some(d)) => {
                let p = self.ids.device(defs, GlobalId(g).machine(), d);
                self.ids.process_track(defs, p)
            }
            (Owner::Device, Some(_), None) => return Err(Skip::NoId("deviceId")),
            _ => return Err(Skip::NoId("globalPid")),
        };
        let name = match text.as_deref().and_then(|t| t.lines().next()) {
            Some(line) if !line.trim().is_empty() => {
                let short: String = line.trim().chars().take(100).collect();
                defs.intern(&short)
            }
            _ => defs.intern(spec.name),
        };
        let mut args = Args::with_capacity(spec.args.len());
        for ac in spec.args {
            if let Some(v) = self.arg_value(&mut c, ac.how, defs) {
                self.arg(defs, &mut args, ac.key, v);
            }
        }
        let cat = defs.intern(spec.cat);
        Parts::plain_instant(track, ts, name, cat, args)
    }

    pub fn decode_sched(&mut self, row: &Row, defs: &mut Defs) -> Decoded {
        let mut c = Cols::new(row);
        let ts = c.int("start")?;
        let Some(gtid) = c.opt_int("globalTid")? else {
            return Err(Skip::NoId("globalTid"));
        };
        let track = self.ids.thread(defs, &self.strings, gtid);
        let mut args = Args::new();
        if let Some(cpu) = c.raw() {
            self.arg(defs, &mut args, "cpu", cpu);
        }
        let name = match c.raw() {
            Some(Value::Int(0)) => defs.intern("sched out"),
            Some(_) => defs.intern("sched in"),
            None => defs.intern("sched"),
        };
        for key in ["thread_state", "thread_block"] {
            if let Some(v) = c.raw() {
                self.arg(defs, &mut args, key, v);
            }
        }
        let cat = defs.intern("sched");
        Parts::plain_instant(track, ts, name, cat, args)
    }
}
