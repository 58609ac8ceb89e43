//! nsys SQLite export → IR. Mapping per table: `docs/formats/nsys.md`.
//!
//! Steps: open the file read-only; probe its schema; read what names things (strings, enums,
//! processes, threads, GPUs, NVTX domains, metadata); compute NVTX→GPU projections if wanted;
//! then one query per kind of row, all merged in time order into the sink; finally name what
//! is left and count the tables that were not read.

use std::path::Path;

use rusqlite::Connection;
use rustc_hash::FxHashMap;
use tracex_ir::{Error, ImportCtx, Progress, Result};

use crate::db::{self, Schema};
use crate::dispatch::Decoder;
use crate::emit::Emitter;
use crate::enums::Enums;
use crate::identity::Identity;
use crate::importer::Importer;
use crate::options::{Activity, ImportOptions};
use crate::plan::StreamDef;
use crate::stacks::Callchains;
use crate::strings::Strings;
use crate::{
    counters, cpu, flows, gpu, instants, merge, meta, nvtx, plan, projection, samples, tables,
};

/// Reads the nsys export at `path` into `ctx`, in time order.
pub fn import(path: &Path, opts: &ImportOptions, ctx: &mut ImportCtx) -> Result<()> {
    let at = db::path_location(path);
    let conn = db::open(path)?;
    let schema = Schema::probe(&conn, &at)?;
    if !crate::sniff::is_nsys(&schema) {
        return Err(Error::invalid(
            at,
            "an SQLite database, but not an Nsight Systems export (it lacks the StringIds table or any nsys event table)",
        ));
    }
    // the launch join's longest read starts now, beside the definitions read here
    std::thread::scope(|scope| {
        let early = projection::early(scope, path, &schema, opts);
        meta::load(&conn, &schema, ctx.defs, ctx.diag);
        let strings = Strings::load(&conn, &schema)?;
        let enums = Enums::load(&conn, &schema);
        let mut ids = Identity::load(&conn, &schema);
        let nvtx_defs = nvtx::load_defs(&conn, &schema, &mut ids, &strings, ctx.diag)?;
        let callchains = Callchains::new(&conn, &schema);
        let mut imp = Importer::new(opts.clone(), strings, enums, ids, callchains, ctx.defs);

        let mut setup = plan::Setup {
            conn: &conn,
            schema: &schema,
            defs: ctx.defs,
            diag: ctx.diag,
            streams: Vec::new(),
        };
        let api = cpu::cuda_api_plan(&mut setup, &mut imp)?;
        cpu::plans(&mut setup, &mut imp)?;
        gpu::plans(&mut setup, &imp)?;
        let share = flows::kernel_launches_wanted(&schema, &imp, api);
        let mut passes = Vec::new();
        let mut kernel_spool = None;
        if let Some((stream, pass)) = projection::plan(&schema, &imp, share, early)? {
            kernel_spool = pass.launch_spool.clone();
            setup.streams.push(stream);
            passes.push(pass);
        }
        let flow_sources = flows::plans(&schema, &imp, api, kernel_spool, &mut setup.streams);
        nvtx::plans(&schema, &imp, &mut setup.streams);
        samples::plans(&mut setup, &imp)?;
        instants::plans(&mut setup, &imp)?;
        let counters = counters::plans(&mut setup, &imp)?;
        let streams = setup.streams;

        ctx.progress.set_unit(tracex_ir::progress::Unit::Rows);
        ctx.progress
            .set_total(progress_total(&conn, &schema, &streams, ctx.progress)?);
        ctx.progress.set_done(0);

        let emitter = Emitter::new(&flow_sources, imp.wants(Activity::NvtxKernel));
        let mut dec = Decoder::new(imp, nvtx_defs, counters, emitter);
        merge::run(&mut dec, path, &streams, &passes, ctx)?;
        if dec.pending_launches() > 0 {
            return Err(Error::invalid(
                at,
                format!(
                    "internal: {} launches never met their GPU work; please report this file",
                    dec.pending_launches()
                ),
            ));
        }
        dec.finish(ctx.defs);
        Ok::<(), Error>(())
    })?;
    tables::account(&conn, &schema, ctx.diag)?;
    Ok(())
}

/// The rows the streams read, for a progress bar: counting them reads every leaf page of
/// their tables (50 ms before the first row of an export of 1M kernels, on the thread that
/// starts the readers), so 0 (unknown) where no bar shows it. A table two streams read
/// counts twice, as its rows advance the bar twice.
fn progress_total(
    conn: &Connection,
    schema: &Schema,
    streams: &[StreamDef],
    progress: &Progress,
) -> Result<u64> {
    if !progress.is_shown() {
        return Ok(0);
    }
    let mut counted: FxHashMap<&str, u64> = FxHashMap::default();
    let mut total = 0;
    for s in streams {
        if let Some(t) = schema.table(&s.table) {
            total += match counted.get(s.table.as_str()) {
                Some(&n) => n,
                None => *counted
                    .entry(&s.table)
                    .or_insert(crate::scan::row_count(conn, &t)?),
            };
        }
    }
    Ok(total)
}
