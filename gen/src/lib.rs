//! Generators of large synthetic traces, shared by the `tracex-gen` binary and the benchmarks.

pub mod android;
pub mod baseline;
pub mod chrome;
pub mod cupti;
pub mod nsys;
