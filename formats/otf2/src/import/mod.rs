//! OTF2 archive → IR, read through libotf2 (mapping: `docs/formats/otf2.md`).
//!
//! Works on any OTF2 2.x/3.x archive libotf2 reads: the global definitions are collected
//! ([`defs`]) and mapped to IR definitions ([`mapping`]), then the events of every location are
//! read in time order with local definitions (mapping tables, clock offsets) applied by libotf2
//! ([`events`]). Slices are emitted at their Leave, so the importer is `EventOrder::Unsorted`.

mod defs;
mod details;
mod events;
mod mapping;

use std::path::{Path, PathBuf};

use tracex_ir::{Error, Event, ImportCtx, Location, Result, Value};

use crate::diag as d;
use crate::ffi::Reader;
use crate::identity;
use crate::options::ImportOptions;
use crate::sniff;
use defs::Otf2Defs;
use events::Handler;
use mapping::Mapping;

/// The anchor file of `path`: the path itself, or the one anchor inside a directory.
pub fn anchor_of(path: &Path) -> Result<PathBuf> {
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let anchors = sniff::anchors_in(path);
    match anchors.len() {
        1 => Ok(anchors.into_iter().next().expect("one")),
        0 => Err(Error::invalid(
            Location::File(path.display().to_string()),
            "no OTF2 anchor file (*.otf2) in this directory",
        )),
        _ => Err(Error::invalid(
            Location::File(path.display().to_string()),
            format!(
                "several OTF2 archives in this directory ({}); give the anchor file to read",
                anchors
                    .iter()
                    .filter_map(|a| a.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// Reads the archive whose anchor file is `path` (or the archive directory `path`) into `ctx`.
pub fn import(path: &Path, _opts: &ImportOptions, ctx: &mut ImportCtx) -> Result<()> {
    let anchor = anchor_of(path)?;
    let located = |e: crate::ffi::Otf2Error| {
        Error::invalid(Location::File(anchor.display().to_string()), e.to_string())
    };
    let mut reader = Reader::open(&anchor).map_err(located)?;
    let props = reader.properties().map_err(located)?;
    let prop = |name: &str| {
        props
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let tracex = prop(identity::FORMAT_PROPERTY).is_some();
    let mut d = Otf2Defs::default();
    reader.read_global_defs(&mut d).map_err(located)?;

    let mut tick_zero = 0;
    if tracex {
        let trace = d
            .nodes
            .values()
            .find(|n| n.parent == otf2_sys::OTF2_UNDEFINED_SYSTEM_TREE_NODE.0)
            .and_then(|root| d.property(&root.props, identity::TRACE_PROPERTY));
        if let Some(t) = trace.and_then(|j| identity::apply_trace_json(ctx.defs, &j)) {
            tick_zero = t;
        }
    } else {
        foreign_trace_meta(&reader, &d, ctx);
    }
    let map = Mapping::new(&d, ctx.defs, tracex, tick_zero)
        .map_err(|m| Error::invalid(Location::File(anchor.display().to_string()), m))?;

    let locations: Vec<u64> = d.locations.keys().copied().collect();
    ctx.progress.set_total(
        d.locations
            .values()
            .fold(0u64, |a, l| a.saturating_add(l.events)),
    );
    let mut h = Handler::new(ctx, map, &d);
    let read = reader.read_events(&locations, &mut h).map_err(located)?;
    h.finish()?;
    // Event kinds without a callback are skipped by libotf2: count them from the number of
    // events each location's definition declares.
    let skipped: u64 = d
        .locations
        .iter()
        .filter(|(_, def)| def.events != otf2_sys::OTF2_UNDEFINED_UINT64)
        .map(|(l, def)| {
            def.events
                .saturating_sub(h.seen.get(l).copied().unwrap_or(0))
        })
        .fold(0u64, u64::saturating_add);
    let unmapped = h.unmapped + skipped;
    let first_unmapped = h.first_unmapped;
    let flows = std::mem::take(&mut h.flows);
    drop(h);
    if unmapped > 0 {
        ctx.diag.record_n(
            &d::IMPORT_UNMAPPED_EVENT,
            unmapped,
            Location::File(anchor.display().to_string()),
            Some(format!(
                "first: {}",
                first_unmapped.unwrap_or("an event kind libotf2 skipped")
            )),
        );
    }
    for (loc, e) in &read.local_def_errors {
        ctx.diag.record_detail(
            &d::IMPORT_LOCAL_DEFS_UNREADABLE,
            Location::File(format!("{} location {loc}", anchor.display())),
            e.to_string(),
        );
    }
    let paired = flows.pair(ctx.defs, ctx.diag);
    ctx.diag.record_n(
        &d::IMPORT_UNMATCHED_MESSAGE,
        paired.start_without_end.0 + paired.end_without_start.0,
        paired
            .start_without_end
            .1
            .or(paired.end_without_start.1)
            .unwrap_or(Location::Nowhere),
        None::<String>,
    );
    for p in paired.points {
        ctx.emit(Event::Flow(p))?;
    }
    Ok(())
}

/// Clock origin and producer of an archive tracex did not write.
fn foreign_trace_meta(reader: &Reader, d: &Otf2Defs, ctx: &mut ImportCtx) {
    match d.clock {
        Some((res, _, _, realtime)) if res > 0 => {
            if realtime != otf2_sys::OTF2_UNDEFINED_TIMESTAMP {
                ctx.defs.clock.origin_unix_ns = i64::try_from(realtime).ok();
            }
            ctx.defs.set_meta("otf2_timer_resolution", Value::UInt(res));
        }
        _ => ctx.diag.record(&d::IMPORT_MISSING_CLOCK, Location::Nowhere),
    }
    if let Ok(Some(c)) = reader.creator() {
        ctx.defs.set_meta("otf2_creator", Value::Str(c.into()));
    }
    if let Ok((a, b, c)) = reader.version() {
        ctx.defs
            .set_meta("otf2_version", Value::Str(format!("{a}.{b}.{c}").into()));
    }
}
