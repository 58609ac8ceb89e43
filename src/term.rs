//! tracex's own messages on stderr, styled like clap's (`error:` in bold red; warnings in the
//! diagnostics summary in bold yellow) and coloured as `--color` and `NO_COLOR` say, for clap's errors and ours alike.

use std::ffi::OsString;
use std::fmt::Display;

use anstyle::{AnsiColor, Style};

/// When to colour messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// When stderr is a terminal and `NO_COLOR` is not set
    #[default]
    Auto,
    Always,
    Never,
}

impl From<ColorWhen> for clap::ColorChoice {
    fn from(w: ColorWhen) -> Self {
        match w {
            ColorWhen::Auto => clap::ColorChoice::Auto,
            ColorWhen::Always => clap::ColorChoice::Always,
            ColorWhen::Never => clap::ColorChoice::Never,
        }
    }
}

pub const ERROR: Style = AnsiColor::Red.on_default().bold();
pub const WARNING: Style = AnsiColor::Yellow.on_default().bold();
pub const DIM: Style = Style::new().dimmed();

/// `--color` from the raw arguments, before clap parses them, so that clap's own errors
/// follow it too (the last one wins, as clap would take it).
pub fn color_from_args(args: impl IntoIterator<Item = OsString>) -> ColorWhen {
    let mut when = ColorWhen::Auto;
    let mut args = args.into_iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = args.next() {
        if a == "--" {
            break;
        }
        let value = match a.strip_prefix("--color") {
            Some("") => args.next(),
            Some(v) => v.strip_prefix('=').map(str::to_string),
            None => None,
        };
        when = match value.as_deref() {
            Some("always") => ColorWhen::Always,
            Some("never") => ColorWhen::Never,
            Some("auto") => ColorWhen::Auto,
            _ => when,
        };
    }
    when
}

/// Sets the colour choice of every message printed through [`anstream`].
pub fn init(when: ColorWhen) {
    let choice = match when {
        // anstream's detection: a terminal, NO_COLOR unset (or CLICOLOR_FORCE set)
        ColorWhen::Auto => anstream::ColorChoice::Auto,
        ColorWhen::Always => anstream::ColorChoice::Always,
        ColorWhen::Never => anstream::ColorChoice::Never,
    };
    choice.write_global();
}

/// `error: MESSAGE`, as clap prints its own.
pub fn error(msg: impl Display) {
    anstream::eprintln!("{ERROR}error:{ERROR:#} {msg}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn color_is_read_before_parsing() {
        let w = |v: &[&str]| color_from_args(v.iter().map(OsString::from));
        assert_eq!(w(&["tracex", "info", "x"]), ColorWhen::Auto);
        assert_eq!(
            w(&["tracex", "--color", "always", "info"]),
            ColorWhen::Always
        );
        assert_eq!(
            w(&["tracex", "info", "--color=never", "x"]),
            ColorWhen::Never
        );
        assert_eq!(
            w(&["tracex", "--color=never", "--color", "always"]),
            ColorWhen::Always
        );
        assert_eq!(w(&["tracex", "--", "--color=never"]), ColorWhen::Auto);
    }
}
