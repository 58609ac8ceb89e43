//! CPU samples: `COMPOSITE_EVENTS` rows (one per sample) with their stacks from
//! `SAMPLING_CALLCHAINS` (looked up per sample by id), as IR samples on thread tracks.

use rusqlite::Connection;

use crate::db::Row;
use tracex_ir::{Defs, Event, Result, Sample};

use crate::cpu::usable;
use crate::db::{Cols, Schema};
use crate::importer::{record_rows, Decoded, Hook, Importer, Skip};
use crate::options::Activity;
use crate::plan::{rows_where, Kind, Query, StreamDef};
use crate::stacks::Chain;

pub fn plans(
    conn: &Connection,
    schema: &Schema,
    imp: &mut Importer,
    defs: &mut Defs,
    out: &mut Vec<StreamDef>,
) -> Result<()> {
    if !imp.opts.activities.contains(Activity::Samples) {
        return Ok(());
    }
    let Some(t) = schema.table("COMPOSITE_EVENTS") else {
        return Ok(());
    };
    if !usable(&t, &["start", "globalTid"], defs, conn)? {
        return Ok(());
    }
    if t.has("threadState") || t.has("cpuCycles") {
        let all = rows_where(conn, &t, "1")?;
        record_rows(
            defs,
            &crate::diag::SAMPLE_FIELDS_DROPPED,
            &t.name,
            all,
            None,
        );
    }
    let query = Query::by_time(
        &t,
        "start",
        format!(
            "SELECT rowid, {} FROM {}",
            t.select_list(&["start", "globalTid", "cpu", "id"]),
            t.sql_name()
        ),
    );
    out.push(StreamDef::new(&t, query, Kind::Sample));
    Ok(())
}

impl Importer<'_> {
    pub fn decode_sample(&mut self, _table: &str, row: &Row, defs: &mut Defs) -> Decoded {
        let mut c = Cols::new(row);
        let ts = c.int("start")?;
        let Some(gtid) = c.opt_int("globalTid")? else {
            return Err(Skip::NoId("globalTid"));
        };
        let cpu = c.opt_int("cpu")?;
        let id = c.opt_int("id")?;
        let track = self.ids.thread(defs, &self.strings, gtid);
        let stack = match id {
            Some(id) => self
                .callchains
                .stack(Chain::Sampling, id, &mut self.strings, defs)?,
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
}
