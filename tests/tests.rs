//! Integration tests: one binary, a module per area.

mod common;

mod chrome;
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
