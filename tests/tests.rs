//! Integration tests: one binary, a module per area.

mod common;

mod chrome;
mod cli;
mod otf2;
