//! `tracex --version`: the version, the commit it was built from, the features compiled in and
//! the libraries they use, as ripgrep prints them.

/// The commit (`git rev-parse --short`), set by `build.rs`; `TRACEX_COMMIT` overrides it for
/// builds outside a git checkout.
const COMMIT: &str = env!("TRACEX_COMMIT");

/// Every optional feature, and whether it is compiled in.
pub fn features() -> Vec<(&'static str, bool)> {
    vec![
        ("otf2", cfg!(feature = "otf2")),
        ("mimalloc", cfg!(feature = "mimalloc")),
    ]
}

/// The text after `tracex ` for `--version` (made once; clap takes a `&'static str`).
pub fn long() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(text)
}

fn text() -> String {
    let features: Vec<String> = features()
        .iter()
        .map(|(f, on)| format!("{}{f}", if *on { '+' } else { '-' }))
        .collect();
    let formats: Vec<&str> = crate::formats::formats().map(|f| f.name).collect();
    #[allow(unused_mut)]
    let mut text = format!(
        "{} (rev {COMMIT})\n\nfeatures: {}\nformats: {}",
        env!("CARGO_PKG_VERSION"),
        features.join(", "),
        formats.join(", ")
    );
    #[cfg(feature = "otf2")]
    text.push_str(&format!("\n{}", tracex_otf2::library()));
    #[cfg(not(feature = "otf2"))]
    text.push_str("\nOTF2: not built in (rebuild with the `otf2` feature and libotf2-trace-dev)");
    text
}
