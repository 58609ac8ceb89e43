//! An SVG line chart of one statistic against the varying parameter: one line per row, error
//! bars for the spread over repeated traces. Hand-written SVG: no plotting dependency.

use std::fmt::Write as _;
use std::path::Path;

use super::select::Pivot;
use super::summary::Stat;
use super::table::Unit;

const W: f64 = 900.0;
const H: f64 = 520.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 300.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 60.0;
const COLORS: &[&str] = &[
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];
/// More lines than this make an unreadable chart; the rest are listed as left out.
const MAX_LINES: usize = 10;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Round tick positions covering [lo, hi].
fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / n as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= n as f64)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).floor() * step;
    let mut v = vec![t];
    // up to the first tick at or above `hi`, so every point is inside the plot
    while t < hi - step * 1e-9 {
        t += step;
        v.push(t);
    }
    v
}

fn label(x: f64) -> String {
    if x == x.trunc() && x.abs() < 1e12 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

pub fn write_svg(path: &Path, p: &Pivot, stat: Stat, unit: Unit) -> std::io::Result<()> {
    let scale = if stat.is_time() { unit.scale() } else { 1.0 };
    let numeric: Option<Vec<f64>> = p.values.iter().map(|v| v.parse::<f64>().ok()).collect();
    // Parameters like batch sizes often double from run to run: a log axis spaces them evenly.
    let log_x = numeric.as_ref().is_some_and(|v| {
        let (lo, hi) = v
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        lo > 0.0 && hi / lo >= 16.0
    });
    let xs: Vec<f64> = match &numeric {
        Some(v) if log_x => v.iter().map(|x| x.log2()).collect(),
        Some(v) => v.clone(),
        None => (0..p.values.len()).map(|i| i as f64).collect(),
    };
    let (xmin, xmax) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let (xmin, xmax) = if xmin == xmax {
        (xmin - 1.0, xmax + 1.0)
    } else {
        (xmin, xmax)
    };
    let lines = p.rows.len().min(MAX_LINES);
    let mut ymax = 0f64;
    for cells in p.cells.iter().take(lines) {
        for c in cells.iter().flatten() {
            ymax = ymax.max((c.mean + c.spread) / scale);
        }
    }
    let yticks = ticks(0.0, if ymax > 0.0 { ymax } else { 1.0 }, 6);
    let ytop = *yticks.last().unwrap_or(&1.0);
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let px = |x: f64| LEFT + (x - xmin) / (xmax - xmin) * pw;
    let py = |y: f64| TOP + ph - y / ytop * ph;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let what = if stat.is_time() {
        format!("{} ({})", stat.name(), unit.name())
    } else {
        stat.name().to_string()
    };
    let _ = writeln!(
        s,
        r#"<text x="{}" y="25" font-size="16" text-anchor="middle">{} per parameter value</text>"#,
        LEFT + pw / 2.0,
        esc(&what)
    );
    // axes and grid
    for &t in &yticks {
        let y = py(t);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/>"##,
            LEFT + pw
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 6.0,
            y + 4.0,
            label(t)
        );
    }
    for (i, v) in p.values.iter().enumerate() {
        let x = px(xs[i]);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#999"/>"##,
            TOP + ph,
            TOP + ph + 5.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            TOP + ph + 20.0,
            esc(v)
        );
    }
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        H - 15.0,
        if log_x {
            "parameter (log scale)"
        } else {
            "parameter"
        }
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(20,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + ph / 2.0,
        esc(&what)
    );
    // one line per row
    for (r, ((name, kind), cells)) in p.rows.iter().zip(&p.cells).take(lines).enumerate() {
        let color = COLORS[r % COLORS.len()];
        let pts: Vec<(f64, f64, f64)> = cells
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.map(|c| (px(xs[i]), py(c.mean / scale), c.spread / scale)))
            .collect();
        let d = pts
            .iter()
            .map(|(x, y, _)| format!("{x:.1},{y:.1}"))
            .collect::<Vec<_>>()
            .join(" ");
        let _ = writeln!(
            s,
            r#"<polyline points="{d}" fill="none" stroke="{color}" stroke-width="2"/>"#
        );
        for &(x, y, spread) in &pts {
            let _ = writeln!(
                s,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{color}"/>"#
            );
            if spread > 0.0 {
                let dy = spread / ytop * ph;
                let _ = writeln!(
                    s,
                    r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{color}"/>"#,
                    y - dy,
                    y + dy
                );
            }
        }
        let ly = TOP + 10.0 + r as f64 * 22.0;
        let lx = LEFT + pw + 15.0;
        let gpu = if p.gpu_rows[r] { " GPU" } else { "" };
        let mut text = format!("{name} [{kind}{gpu}]");
        if text.chars().count() > 40 {
            text = text.chars().take(39).collect::<String>() + "…";
        }
        let _ = writeln!(
            s,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="3"/>"#,
            lx + 18.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 24.0,
            ly + 4.0,
            esc(&text)
        );
    }
    if p.rows.len() > lines {
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" fill="#666">+{} more rows not drawn</text>"##,
            LEFT + pw + 15.0,
            TOP + 10.0 + lines as f64 * 22.0,
            p.rows.len() - lines
        );
    }
    s.push_str("</svg>\n");
    let tmp = tracex_ir::io::temp_path_beside(path);
    std::fs::write(&tmp, s)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_ticks() {
        assert_eq!(ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(*ticks(0.0, 1293.9, 6).last().unwrap(), 1500.0);
        let t = ticks(0.0, 0.37, 6);
        assert!(t.last().unwrap() >= &0.37 && t.len() <= 8, "{t:?}");
        assert_eq!(label(2.5), "2.5");
        assert_eq!(label(3.0), "3");
    }
}
