//! The error type shared by importers, adapters and exporters.

use crate::diag::Location;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The input is malformed at `location`.
    #[error("{location}: {message}")]
    Invalid { location: Location, message: String },
    /// The input is well-formed but something in it cannot be handled.
    #[error("{0}")]
    Unsupported(String),
    /// A failure reported by a library (SQLite, libotf2, ...).
    #[error("{0}")]
    Library(String),
    /// A sink that took its events unordered ([`crate::Sink::unordered`]) cannot work out
    /// what the total order would have given: the pipeline runs again in order.
    #[error("internal: the output needs its events in order ({0})")]
    NeedsOrder(&'static str),
}

impl Error {
    pub fn invalid(location: Location, message: impl Into<String>) -> Error {
        Error::Invalid {
            location,
            message: message.into(),
        }
    }
}
