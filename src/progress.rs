//! A progress bar on stderr while inputs are read, only when stderr is a terminal and not
//! `--quiet`; otherwise nothing.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tracex_ir::progress::Unit;
use tracex_ir::Progress;

pub struct Bar {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Bar {
    /// Shows the summed progress of `items` under `label`.
    pub fn start(items: Vec<Arc<Progress>>, label: String, quiet: bool) -> Bar {
        let stop = Arc::new(AtomicBool::new(false));
        if quiet || !std::io::stderr().is_terminal() {
            return Bar { stop, handle: None };
        }
        for p in &items {
            p.set_shown();
        }
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            let bar = ProgressBar::new(0);
            let mut unit = None;
            bar.set_message(label);
            while !s.load(Ordering::Relaxed) {
                // an importer says what it counts once it starts
                let now = if items.iter().any(|p| p.unit() == Unit::Rows) {
                    Unit::Rows
                } else {
                    Unit::Bytes
                };
                if unit != Some(now) {
                    unit = Some(now);
                    bar.set_style(ProgressStyle::with_template(template(now)).expect("template"));
                }
                let (done, total) = items
                    .iter()
                    .fold((0, 0), |(d, t), p| (d + p.done(), t + p.total()));
                bar.set_length(total.max(done));
                bar.set_position(done);
                std::thread::sleep(Duration::from_millis(100));
            }
            bar.finish_and_clear();
        });
        Bar {
            stop,
            handle: Some(handle),
        }
    }
}

/// The bar's template for what the inputs count: bytes of a file, or rows of a database.
fn template(unit: Unit) -> &'static str {
    match unit {
        Unit::Bytes => {
            "{msg} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})"
        }
        Unit::Rows => {
            "{msg} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} rows ({per_sec}, eta {eta})"
        }
    }
}

/// A spinner with a message for work of unknown length (sorting and writing after reading).
pub struct Spinner(Option<ProgressBar>);

impl Spinner {
    pub fn start(message: &str, quiet: bool) -> Spinner {
        if quiet || !std::io::stderr().is_terminal() {
            return Spinner(None);
        }
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}]").expect("template"),
        );
        bar.set_message(message.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        Spinner(Some(bar))
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(b) = self.0.take() {
            b.finish_and_clear();
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_shown_as_rows() {
        let rows = template(Unit::Rows);
        assert!(rows.contains("rows") && !rows.contains("bytes"), "{rows}");
        assert!(ProgressStyle::with_template(rows).is_ok());
        assert!(template(Unit::Bytes).contains("{bytes}"));
    }
}
