//! Writing statistics: aligned text, Markdown, CSV or JSON.

use std::io::Write;

use serde_json::json;

use super::select::{Pivot, RowKey, TraceReport};
use super::summary::{Stat, Summary};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutFormat {
    Table,
    Csv,
    Json,
    Markdown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Unit {
    Ns,
    Us,
    Ms,
    S,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Us => "us",
            Unit::Ms => "ms",
            Unit::S => "s",
        }
    }

    pub fn scale(self) -> f64 {
        match self {
            Unit::Ns => 1.0,
            Unit::Us => 1e3,
            Unit::Ms => 1e6,
            Unit::S => 1e9,
        }
    }

    /// A time in ns in this unit, three decimals (none for ns).
    pub fn fmt(self, ns: f64) -> String {
        match self {
            Unit::Ns => format!("{ns:.0}"),
            u => format!("{:.3}", ns / u.scale()),
        }
    }
}

/// A CSV writer: fields quoted when they hold a comma, a quote, CR or LF; lines end in LF.
fn csv_writer(out: &mut dyn Write) -> csv::Writer<&mut dyn Write> {
    csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(out)
}

/// Prints rows of cells aligned in columns (text) or as a Markdown table.
fn write_grid(
    out: &mut dyn Write,
    header: &[String],
    rows: &[Vec<String>],
    markdown: bool,
) -> std::io::Result<()> {
    if markdown {
        // a `|` inside a cell (a regex pattern) would split it
        let cells = |r: &[String]| {
            r.iter()
                .map(|c| c.replace('|', "\\|"))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        writeln!(out, "| {} |", cells(header))?;
        writeln!(
            out,
            "|{}|",
            header.iter().map(|_| "---").collect::<Vec<_>>().join("|")
        )?;
        for r in rows {
            writeln!(out, "| {} |", cells(r))?;
        }
        return Ok(());
    }
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = width[i] - c.chars().count();
                // names left, numbers right
                if i < 2 {
                    format!("{c}{}", " ".repeat(pad))
                } else {
                    format!("{}{c}", " ".repeat(pad))
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    writeln!(out, "{}", line(header))?;
    for r in rows {
        writeln!(out, "{}", line(r))?;
    }
    Ok(())
}

fn summary_json(s: &Summary) -> serde_json::Value {
    json!({"count": s.count, "total_ns": s.total, "mean_ns": s.mean, "min_ns": s.min,
           "median_ns": s.median, "p95_ns": s.p95, "max_ns": s.max})
}

/// One table per trace (or one CSV/JSON document for all).
pub fn write_per_trace(
    out: &mut dyn Write,
    reports: &[TraceReport],
    rows: &[RowKey],
    format: OutFormat,
    unit: Unit,
) -> anyhow::Result<()> {
    match format {
        OutFormat::Json => {
            let doc: Vec<_> = reports
                .iter()
                .map(|r| {
                    let rows: Vec<_> = rows
                        .iter()
                        .filter_map(|k| r.rows.get(k).map(|d| (k, d)))
                        .map(|((name, kind), d)| {
                            json!({"kind": kind, "name": name, "stats": summary_json(&d.all),
                                   "gpu": d.gpu.as_ref().map(summary_json)})
                        })
                        .collect();
                    json!({"trace": r.path, "span_ns": r.span, "open_slices": r.open_slices, "rows": rows})
                })
                .collect();
            writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        }
        OutFormat::Csv => {
            let mut w = csv_writer(out);
            w.write_record([
                "trace",
                "kind",
                "name",
                "count",
                "total_ns",
                "mean_ns",
                "min_ns",
                "median_ns",
                "p95_ns",
                "max_ns",
                "gpu_count",
                "gpu_total_ns",
                "gpu_mean_ns",
                "gpu_median_ns",
                "gpu_max_ns",
            ])?;
            for r in reports {
                for k in rows {
                    let Some(d) = r.rows.get(k) else { continue };
                    let s = &d.all;
                    let g = d.gpu.as_ref();
                    w.write_record([
                        r.path.clone(),
                        k.1.to_string(),
                        k.0.clone(),
                        s.count.to_string(),
                        s.total.to_string(),
                        format!("{:.1}", s.mean),
                        s.min.to_string(),
                        s.median.to_string(),
                        s.p95.to_string(),
                        s.max.to_string(),
                        g.map_or(String::new(), |g| g.count.to_string()),
                        g.map_or(String::new(), |g| g.total.to_string()),
                        g.map_or(String::new(), |g| format!("{:.1}", g.mean)),
                        g.map_or(String::new(), |g| g.median.to_string()),
                        g.map_or(String::new(), |g| g.max.to_string()),
                    ])?;
                }
            }
            w.flush()?;
        }
        OutFormat::Table | OutFormat::Markdown => {
            let u = unit.name();
            let header: Vec<String> = [
                "kind".to_string(),
                "name".to_string(),
                "count".to_string(),
                format!("total {u}"),
                format!("mean {u}"),
                format!("min {u}"),
                format!("median {u}"),
                format!("p95 {u}"),
                format!("max {u}"),
                format!("GPU total {u}"),
                format!("GPU mean {u}"),
            ]
            .to_vec();
            for (i, r) in reports.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                let span = r
                    .span
                    .map(|s| format!(", span {} {u}", unit.fmt(s as f64)))
                    .unwrap_or_default();
                if format == OutFormat::Markdown {
                    writeln!(out, "### {}{span}\n", r.path)?;
                } else {
                    writeln!(out, "== {}{span}", r.path)?;
                }
                let cells: Vec<Vec<String>> = rows
                    .iter()
                    .filter_map(|k| r.rows.get(k).map(|d| (k, d)))
                    .map(|((name, kind), d)| {
                        let s = &d.all;
                        vec![
                            kind.to_string(),
                            name.clone(),
                            s.count.to_string(),
                            unit.fmt(s.total as f64),
                            unit.fmt(s.mean),
                            unit.fmt(s.min as f64),
                            unit.fmt(s.median as f64),
                            unit.fmt(s.p95 as f64),
                            unit.fmt(s.max as f64),
                            d.gpu
                                .as_ref()
                                .map_or("-".into(), |g| unit.fmt(g.total as f64)),
                            d.gpu.as_ref().map_or("-".into(), |g| unit.fmt(g.mean)),
                        ]
                    })
                    .collect();
                if cells.is_empty() {
                    writeln!(out, "(no matching events)")?;
                } else {
                    write_grid(out, &header, &cells, format == OutFormat::Markdown)?;
                }
            }
        }
    }
    Ok(())
}

/// One column per parameter value.
pub fn write_pivot(
    out: &mut dyn Write,
    p: &Pivot,
    stat: Stat,
    format: OutFormat,
    unit: Unit,
) -> anyhow::Result<()> {
    let fmt_value = |x: f64| {
        if stat.is_time() {
            unit.fmt(x)
        } else {
            format!("{x:.1}")
        }
    };
    match format {
        OutFormat::Json => {
            let rows: Vec<_> = p
                .rows
                .iter()
                .zip(&p.cells)
                .zip(&p.gpu_rows)
                .map(|(((name, kind), cells), gpu)| {
                    let cells: Vec<_> = p
                        .values
                        .iter()
                        .zip(cells)
                        .map(|(v, c)| match c {
                            Some(c) => json!({"param": v, "mean": c.mean, "spread": c.spread, "traces": c.n}),
                            None => json!({"param": v, "mean": null}),
                        })
                        .collect();
                    json!({"kind": kind, "name": name, "gpu_time": gpu, "cells": cells})
                })
                .collect();
            let doc = json!({"stat": stat.name(), "unit": if stat.is_time() { "ns" } else { "count" },
                             "params": p.values, "rows": rows});
            writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        }
        OutFormat::Csv => {
            let mut w = csv_writer(out);
            w.write_record([
                "kind".to_string(),
                "name".to_string(),
                "gpu_time".to_string(),
                "param".to_string(),
                format!("{}_mean", stat.name()),
                format!("{}_spread", stat.name()),
                "traces".to_string(),
            ])?;
            for (((name, kind), cells), gpu) in p.rows.iter().zip(&p.cells).zip(&p.gpu_rows) {
                for (v, c) in p.values.iter().zip(cells) {
                    if let Some(c) = c {
                        w.write_record([
                            kind.to_string(),
                            name.clone(),
                            gpu.to_string(),
                            v.clone(),
                            c.mean.to_string(),
                            c.spread.to_string(),
                            c.n.to_string(),
                        ])?;
                    }
                }
            }
            w.flush()?;
        }
        OutFormat::Table | OutFormat::Markdown => {
            let what = if stat.is_time() {
                format!("{} ({})", stat.name(), unit.name())
            } else {
                stat.name().to_string()
            };
            let mut header = vec!["kind".to_string(), "name".to_string()];
            header.extend(p.values.iter().map(|v| format!("p={v}")));
            let cells: Vec<Vec<String>> = p
                .rows
                .iter()
                .zip(&p.cells)
                .zip(&p.gpu_rows)
                .map(|(((name, kind), cells), gpu)| {
                    let mut row = vec![
                        if *gpu {
                            format!("{kind} (GPU)")
                        } else {
                            kind.to_string()
                        },
                        name.clone(),
                    ];
                    row.extend(cells.iter().map(|c| match c {
                        None => "-".to_string(),
                        Some(c) if c.n > 1 => {
                            format!("{} ±{}", fmt_value(c.mean), fmt_value(c.spread))
                        }
                        Some(c) => fmt_value(c.mean),
                    }));
                    row
                })
                .collect();
            if format == OutFormat::Markdown {
                writeln!(
                    out,
                    "{what} per parameter value (± standard deviation over repeated traces)\n"
                )?;
            } else {
                writeln!(
                    out,
                    "== {what} per parameter value (± standard deviation over repeated traces)"
                )?;
            }
            write_grid(out, &header, &cells, format == OutFormat::Markdown)?;
        }
    }
    Ok(())
}
