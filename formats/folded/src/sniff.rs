//! Recognising folded stacks from their first lines.

use tracex_ir::{Confidence, Probe};

use crate::import::{extended, plain};

/// How many stack lines to look at.
const LINES: usize = 50;

/// Extended folded: every line looked at has the `ts comm pid tid cpu stack` shape — certain.
/// Plain folded: every line ends in one or two counts — certain if some stack has a `;`, else
/// likely (single-frame stacks exist, but so does other text ending in a number). `#` comments
/// and blank lines are skipped; a few malformed lines (py-spy's ` 2`) are tolerated.
pub fn sniff(probe: &Probe) -> Confidence {
    if probe.is_dir {
        return Confidence::No;
    }
    let Some(text) = probe.text() else {
        return Confidence::No;
    };
    // The head may end in the middle of a line: leave that line out.
    let complete = if probe.head.len() >= 64 << 10 {
        text.rfind('\n').map_or("", |i| &text[..i])
    } else {
        text
    };
    let lines: Vec<&str> = complete
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .take(LINES)
        .collect();
    if lines.is_empty() {
        return Confidence::No;
    }
    if lines.iter().all(|l| extended::looks_extended(l)) {
        return Confidence::Certain;
    }
    let mut good = 0;
    let mut semicolons = false;
    for l in &lines {
        if let plain::Line::Stack { stack, .. } = plain::parse(l) {
            if !stack.is_empty() {
                good += 1;
                semicolons |= stack.contains(';');
            }
        }
    }
    let bad = lines.len() - good;
    match (bad, semicolons) {
        (0, true) => Confidence::Certain,
        (0, false) => Confidence::Maybe(50),
        _ if good >= 10 * bad && semicolons => Confidence::Maybe(70),
        _ => Confidence::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(s: &str) -> Confidence {
        sniff(&Probe {
            path: None,
            head: s.as_bytes(),
            compressed: false,
            is_dir: false,
        })
    }

    #[test]
    fn recognises_both_dialects_and_nothing_else() {
        assert_eq!(probe("main;foo 3\nmain;bar 1\n"), Confidence::Certain);
        assert_eq!(probe("# austin\n\nP1;T1;f 2\n"), Confidence::Certain);
        assert_eq!(probe("main 3\n"), Confidence::Maybe(50));
        assert_eq!(
            probe("1761680628903821454 runcu 3861826 3861826 1 _start;main;cudaLaunchKernel\n"),
            Confidence::Certain
        );
        assert_eq!(probe("{\"traceEvents\":[]}"), Confidence::No);
        assert_eq!(
            probe("Calling CUPTI API: cuptiSubscribe(x)\nRUNTIME [ 1, 2 ] duration 1, \"cudaFree\", correlationId 3\n"),
            Confidence::No
        );
        assert_eq!(probe(""), Confidence::No);
        assert_eq!(probe("SQLite format 3\0"), Confidence::No);
    }
}
