//! The yardstick for Chrome import speed: plain `serde_json` typed parsing of the whole file
//! into owned structs, the way a typical Rust tool reads a trace.

use serde::Deserialize;

#[derive(Deserialize)]
pub struct TypedTrace {
    #[serde(rename = "traceEvents")]
    pub trace_events: Vec<TypedEvent>,
}

#[derive(Deserialize)]
pub struct TypedEvent {
    pub ph: String,
    pub name: Option<String>,
    pub cat: Option<String>,
    pub ts: Option<f64>,
    pub dur: Option<f64>,
    pub pid: Option<serde_json::Value>,
    pub tid: Option<serde_json::Value>,
    pub id: Option<serde_json::Value>,
    pub bp: Option<String>,
    pub s: Option<String>,
    pub args: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Parses `bytes` as a whole; returns the number of events.
pub fn parse(bytes: &[u8]) -> serde_json::Result<usize> {
    let t: TypedTrace = serde_json::from_slice(bytes)?;
    Ok(t.trace_events.len())
}
