//! Integration tests: one binary, a module per area.

mod common;

mod analysers;

mod chrome;
mod chrome_output;
mod cli;
mod cupti;
mod filters;
mod folded;
mod hostile;
mod modules;
mod multi;
mod nsys;
mod otf2;
mod perfetto;
mod ship;
mod stats;
mod trace_processor;
mod unordered;
mod viewers;
