//! Point events: thread scheduling (`SCHED_EVENTS`) on thread tracks; unified-memory page
//! faults and memory-pool operations on their process's or GPU's process track; nsys's own
//! diagnostics (`DIAGNOSTIC_EVENT`) on the trace-wide track (the catalogue's instant tables).

use tracex_ir::{Args, Defs, Result, Value};

use crate::catalogue::{InstantTable, Owner, INSTANT_TABLES};
use crate::db::{Cols, Row};
use crate::decoded::{Decoded, Parts, Skip};
use crate::identity::GlobalId;
use crate::importer::Importer;
use crate::options::Activity;
use crate::plan::{Kind, Query, Setup, StreamDef};

/// The columns an instant table is read by, in this order, then its name column and args.
const CORE: &[&str] = &["globalPid", "deviceId"];

pub fn plans(setup: &mut Setup, imp: &Importer) -> Result<()> {
    for spec in INSTANT_TABLES {
        let mut needed = vec![spec.ts];
        match spec.owner {
            Owner::Process => needed.push("globalPid"),
            Owner::Device => needed.extend(["globalPid", "deviceId"]),
            Owner::Global => {}
        }
        let what = (spec.activity, spec.table);
        let Some(t) = setup.wanted(imp.activities(), what, &needed)? else {
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
    if let Some(t) = setup.wanted(imp.activities(), what, &needed)? {
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

/// A row of a point-event table of the catalogue.
pub fn decode_instant(
    imp: &mut Importer,
    spec: &InstantTable,
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
            let p = imp.process(defs, GlobalId(g));
            imp.process_track(defs, p)
        }
        (Owner::Device, Some(g), Some(d)) => {
            let p = imp.device(defs, GlobalId(g).machine(), d);
            imp.process_track(defs, p)
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
        imp.arg_column(defs, &mut c, ac.how, &mut args, |imp, defs| {
            imp.key(defs, ac.key)
        });
    }
    let cat = defs.intern(spec.cat);
    Parts::plain_instant(track, ts, name, cat, args)
}

/// A thread scheduling row.
pub fn decode_sched(imp: &mut Importer, row: &Row, defs: &mut Defs) -> Decoded {
    let mut c = Cols::new(row);
    let ts = c.int("start")?;
    let Some(gtid) = c.opt_int("globalTid")? else {
        return Err(Skip::NoId("globalTid"));
    };
    let track = imp.thread(defs, gtid);
    let mut args = Args::new();
    if let Some(cpu) = c.raw() {
        imp.arg(defs, &mut args, "cpu", || cpu);
    }
    let name = match c.raw() {
        Some(Value::Int(0)) => defs.intern("sched out"),
        Some(_) => defs.intern("sched in"),
        None => defs.intern("sched"),
    };
    for key in ["thread_state", "thread_block"] {
        if let Some(v) = c.raw() {
            imp.arg(defs, &mut args, key, || v);
        }
    }
    let cat = defs.intern("sched");
    Parts::plain_instant(track, ts, name, cat, args)
}
