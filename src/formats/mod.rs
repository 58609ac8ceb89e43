//! The format registry: every format crate's descriptor, and lookups over them. What a format
//! is (its names, sniffer, importer, exporter, options, diagnostics) lives in its crate; adding
//! a format is one line in [`FORMATS`]. Which format an input is: [`sniff`].

pub mod sniff;

use tracex_ir::format::Format;

/// Every format, in the order `tracex formats` lists them.
static FORMATS: &[&Format] = &[
    &tracex_chrome::FORMAT,
    &tracex_cupti::FORMAT,
    &tracex_folded::FORMAT,
    &tracex_flamegraph::FORMAT,
    &tracex_nsys::FORMAT,
    #[cfg(feature = "otf2")]
    &tracex_otf2::FORMAT,
    &tracex_perfetto::FORMAT,
];

pub fn formats() -> impl Iterator<Item = &'static Format> {
    FORMATS.iter().copied()
}

/// The format called `name` (or one of its aliases), in any case.
pub fn by_name(name: &str) -> Option<&'static Format> {
    let n = name.to_ascii_lowercase();
    formats().find(|f| f.name == n || f.aliases.contains(&n.as_str()))
}

/// The output format suggested by a file name, longest matching extension first.
pub fn for_output_name(name: &str) -> Option<&'static Format> {
    let lower = name.to_ascii_lowercase();
    formats()
        .filter(|f| f.export.is_some())
        .flat_map(|f| f.extensions.iter().map(move |e| (f, *e)))
        .filter(|(_, e)| lower.ends_with(e))
        .max_by_key(|(_, e)| e.len())
        .map(|(f, _)| f)
}

/// The `--activity` words some format understands beyond the generic ones (nsys tables).
pub fn activity_words() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    for w in formats()
        .filter_map(|f| f.import.as_ref())
        .flat_map(|i| i.activities.iter().copied())
    {
        if !v.contains(&w) {
            v.push(w);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--from` / `--to` names must say one format: names and aliases are unique.
    #[test]
    fn names_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for f in formats() {
            for n in std::iter::once(&f.name).chain(f.aliases) {
                assert!(seen.insert(*n), "{n} names two formats");
                assert_eq!(n.to_ascii_lowercase(), *n);
            }
        }
    }

    /// What a refining format refines is in the registry.
    #[test]
    fn refinements_name_formats() {
        for f in formats() {
            if let Some(r) = f.refines {
                assert!(by_name(r).is_some(), "{} refines unknown {r}", f.name);
            }
        }
    }
}
