//! Picking an input's format: `--from`, else the most confident sniffer, a refining format over
//! the one it refines, then the file extension; no match or an unresolved tie is an error that
//! lists what was tried.

use anyhow::bail;
use tracex_ir::format::Format;
use tracex_ir::{Confidence, Probe};

/// Every importer's answer for an input, best first.
pub fn sniff_all(probe: &Probe) -> Vec<(&'static Format, Confidence)> {
    let mut v: Vec<_> = super::formats()
        .filter(|f| f.import.is_some())
        .map(|f| (f, (f.sniff)(probe)))
        .collect();
    v.sort_by_key(|a| std::cmp::Reverse(a.1));
    v
}

/// The format of the input `probe` looks at (`display` names it in errors): `from`, else what
/// the sniffers say.
pub fn resolve(
    probe: &Probe,
    display: &str,
    from: Option<&str>,
) -> anyhow::Result<&'static Format> {
    if let Some(name) = from {
        let Some(f) = super::by_name(name) else {
            bail!("unknown input format {name:?} (see `tracex formats`)");
        };
        if f.import.is_none() {
            bail!("tracex cannot read {name} files");
        }
        return Ok(f);
    }
    let answers = sniff_all(probe);
    let tried = answers
        .iter()
        .map(|(f, c)| format!("{}: {}", f.name, describe(*c)))
        .collect::<Vec<_>>()
        .join(", ");
    let best = answers.first().map(|a| a.1).unwrap_or(Confidence::No);
    if best == Confidence::No {
        let what = if probe.head.is_empty() && !probe.is_dir {
            "the input is empty".to_string()
        } else {
            "no format recognised its content".to_string()
        };
        bail!("{display}: {what} (tried {tried}); use --from to force a format");
    }
    let top: Vec<_> = answers.iter().filter(|a| a.1 == best).collect();
    if top.len() == 1 {
        return Ok(top[0].0);
    }
    if let Some(f) = refining_winner(top.iter().map(|a| a.0)) {
        return Ok(f);
    }
    let by_ext: Vec<_> = top
        .iter()
        .filter(|(f, _)| probe.has_extension(f.extensions))
        .collect();
    if by_ext.len() == 1 {
        return Ok(by_ext[0].0);
    }
    bail!("{display}: ambiguous input, several formats match equally ({tried}); use --from")
}

/// Among formats that sniffed an input equally sure, the one that refines all the others
/// (CUPTI's Chrome JSON is Chrome JSON with more meaning: `cupti` refines `chrome`), if exactly
/// one does. A refinement is the more specific reading of the same bytes, so it wins the tie.
fn refining_winner(tied: impl Iterator<Item = &'static Format> + Clone) -> Option<&'static Format> {
    let mut winners = tied.clone().filter(|f| {
        tied.clone()
            .all(|o| o.name == f.name || f.refines == Some(o.name))
    });
    let w = winners.next()?;
    winners.next().is_none().then_some(w)
}

pub fn describe(c: Confidence) -> String {
    match c {
        Confidence::No => "no".into(),
        Confidence::Maybe(n) => format!("maybe ({n}%)"),
        Confidence::Certain => "certain".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format(name: &'static str, refines: Option<&'static str>) -> &'static Format {
        Box::leak(Box::new(Format {
            name,
            aliases: &[],
            description: "",
            extensions: &[],
            sniff: |_| Confidence::No,
            refines,
            diagnostics: &[],
            import: None,
            export: None,
        }))
    }

    #[test]
    fn a_refinement_wins_a_tie_only_over_what_it_refines() {
        let chrome = format("chrome", None);
        let cupti = format("cupti", Some("chrome"));
        let other = format("other", None);
        let pick = |v: &[&'static Format]| refining_winner(v.iter().copied()).map(|f| f.name);
        assert_eq!(pick(&[chrome, cupti]), Some("cupti"));
        assert_eq!(pick(&[cupti, chrome]), Some("cupti"));
        // a tie with a format it does not refine stays ambiguous
        assert_eq!(pick(&[chrome, cupti, other]), None);
        assert_eq!(pick(&[chrome, other]), None);
    }
}
