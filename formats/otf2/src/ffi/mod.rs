//! A safe layer over libotf2 (`otf2-sys`): an archive writer with per-location event writers and
//! a global definition writer, a reader that pushes definitions and events into handler traits,
//! typed attribute values, and every libotf2 error code turned into an [`Otf2Error`].

pub mod attrs;
pub mod error;
mod handler;
pub mod reader;
mod unmapped;
pub mod writer;

pub use attrs::{AttrList, AttrValue};
pub use error::{Otf2Error, Result};
pub use reader::{Attrs, DefHandler, EventHandler, MetricVal, ParamVal, Reader};
pub use writer::{ArchiveWriter, EvtWriter, GlobalDefWriter};
