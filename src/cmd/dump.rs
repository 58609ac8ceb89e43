use std::io::Write;

use tracex_ir::dump::{dump_with, DumpOptions};
use tracex_ir::{Defs, Event, Sink};

use crate::cli::DumpArgs;
use crate::options::Options;

/// Collects events into a shared buffer so they survive the sink chain being finished.
struct Collect(std::rc::Rc<std::cell::RefCell<Vec<Event>>>);

impl Sink for Collect {
    fn event(&mut self, _: &mut Defs, e: Event) -> tracex_ir::Result<()> {
        self.0.borrow_mut().push(e);
        Ok(())
    }
    fn finish(&mut self, _: &mut Defs) -> tracex_ir::Result<()> {
        Ok(())
    }
}

pub fn run(args: &DumpArgs, quiet: bool) -> anyhow::Result<()> {
    let mut sources = super::open_sources(std::slice::from_ref(&args.input), args.from.as_deref())?;
    let mut defs = Defs::new();
    let events = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    super::run(
        &mut sources,
        &Options::default(),
        &args.common,
        crate::pipeline::Align::Clock,
        &mut defs,
        Box::new(Collect(events.clone())),
        quiet,
    )?;
    let text = dump_with(
        &defs,
        &events.borrow(),
        &DumpOptions {
            diagnostics: !args.no_diagnostics,
        },
    );
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    Ok(())
}
