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
    // A line of binary data does not make the rest unreadable: the importer reports it.
    let text = String::from_utf8_lossy(probe.head);
    // The head may end in the middle of a line: leave that line out.
    let complete = if probe.head.len() >= 64 << 10 {
        text.rfind('\n').map_or("", |i| &text[..i])
    } else {
        &text
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
    let (mut good, mut bad) = (0, 0);
    let mut semicolons = false;
    for l in &lines {
        match plain::parse(l) {
            // a count without a stack (py-spy's idle samples) says nothing either way
            plain::Line::Stack { stack: "", .. } => {}
            plain::Line::Stack { stack, .. } => {
                good += 1;
                semicolons |= stack.contains(';');
            }
            plain::Line::Bad(_) => bad += 1,
        }
    }
    match (bad, semicolons) {
        _ if good == 0 => Confidence::No,
        (0, true) => Confidence::Certain,
        (0, false) => Confidence::Maybe(50),
        _ if good >= 4 * bad && semicolons => Confidence::Maybe(70),
        _ => Confidence::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(s: &str) -> Confidence {
        sniff(&Probe::of_bytes(s.as_bytes()))
    }

    #[test]
    fn recognises_both_dialects_and_nothing_else() {
        assert_eq!(probe("main;foo 3\nmain;bar 1\n"), Confidence::Certain);
        assert_eq!(probe("# austin\n\nP1;T1;f 2\n"), Confidence::Certain);
        assert_eq!(probe("main 3\n"), Confidence::Maybe(50));
        assert_eq!(probe("a;b 3\n 2\na;c 1\n"), Confidence::Certain);
        assert_eq!(
            probe("a;b 3\nbad\na;c 1\na;d 1\na;e 1\n"),
            Confidence::Maybe(70)
        );
        assert_eq!(
            probe("a;b 3\n\u{fffd}\u{fffd}\na;c 1\na;d 1\na;e 1\n"),
            Confidence::Maybe(70)
        );
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
