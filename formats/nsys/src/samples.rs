//! CPU samples: `COMPOSITE_EVENTS` rows (one per sample) with their stacks from
//! `SAMPLING_CALLCHAINS` (looked up per sample by id), as IR samples on thread tracks.

use tracex_ir::{Defs, Event, Result, Sample};

use crate::db::{Cols, Row};
use crate::decoded::{Decoded, Hook, Skip};
use crate::diag::record_rows;
use crate::importer::Importer;
use crate::options::Activity;
use crate::plan::{Kind, Query, Setup, StreamDef};
use crate::stacks::Chain;

pub fn plans(setup: &mut Setup, imp: &Importer) -> Result<()> {
    let what = (Activity::Samples, "COMPOSITE_EVENTS");
    let needed = ["start", "globalTid"];
    let Some(t) = setup.wanted(imp.activities(), what, &needed)? else {
        return Ok(());
    };
    if t.has("threadState") || t.has("cpuCycles") {
        let all = crate::scan::rows(setup.conn, &t)?;
        record_rows(
            setup.diag,
            &crate::diag::SAMPLE_FIELDS_DROPPED,
            &t.name,
            all,
            None,
        );
    }
    let query = Query::columns_by_time(&t, "start", &["start", "globalTid", "cpu", "id"]);
    setup.streams.push(StreamDef::new(&t, query, Kind::Sample));
    Ok(())
}

/// A CPU sample.
pub fn decode_sample(imp: &mut Importer, row: &Row, defs: &mut Defs) -> Decoded {
    let mut c = Cols::new(row);
    let ts = c.int("start")?;
    let Some(gtid) = c.opt_int("globalTid")? else {
        return Err(Skip::NoId("globalTid"));
    };
    let cpu = c.opt_int("cpu")?;
    let id = c.opt_int("id")?;
    let track = imp.thread(defs, gtid);
    let stack = match id {
        Some(id) => imp.stack(defs, Chain::Sampling, id)?,
        None => None,
    };
    Ok(Some((
        Event::Sample(Sample {
            track,
            ts: Some(ts),
            stack,
            weight: 1,
            cpu: cpu.and_then(|c| u32::try_from(c).ok()),
            name: None,
        }),
        Hook::None,
    )))
}
