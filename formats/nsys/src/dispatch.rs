//! Decode and emit dispatch for the merge: which decoder a stream's rows go to, and what
//! emitting an event sets off. Holds the shared importer state and each decoder's own.

use tracex_ir::order::OrderKey;
use tracex_ir::{Defs, Diagnostics, Event, ImportCtx};

use crate::counters::Counters;
use crate::cpu::{self, ApiNames};
use crate::db::Row;
use crate::decoded::{Hook, Skip, Slot};
use crate::emit::Emitter;
use crate::gpu::{self, MemcpyNames};
use crate::importer::Importer;
use crate::nvtx::{NvtxDefs, RangeKind};
use crate::plan::Kind;
use crate::{flows, instants, projection, samples};

/// Everything the merge needs to turn rows into events.
pub struct Decoder<'c> {
    imp: Importer<'c>,
    api_names: ApiNames,
    memcpy_names: MemcpyNames,
    nvtx: NvtxDefs,
    counters: Counters,
    emitter: Emitter,
}

impl<'c> Decoder<'c> {
    pub fn new(
        imp: Importer<'c>,
        nvtx: NvtxDefs,
        counters: Counters,
        emitter: Emitter,
    ) -> Decoder<'c> {
        Decoder {
            imp,
            api_names: ApiNames::default(),
            memcpy_names: MemcpyNames::default(),
            nvtx,
            counters,
            emitter,
        }
    }

    /// Turns one row of a stream of `kind` into an event in `slot` (left empty when the row
    /// gives none), or the reason it gives none.
    pub fn decode(
        &mut self,
        kind: &Kind,
        table: &str,
        row: &Row,
        ctx: &mut ImportCtx,
        slot: &mut Slot,
    ) -> Result<(), Skip> {
        let imp = &mut self.imp;
        let out = (&mut *ctx.defs, &mut *ctx.diag);
        let range = |async_range, emit| RangeKind { async_range, emit };
        // the most frequent rows are made in the slot ([`Slot`]), the others returned
        let decoded = match kind {
            Kind::CudaApi => {
                return cpu::decode_cuda_api(imp, &mut self.api_names, table, row, out, slot)
            }
            Kind::Cpu(plan) => cpu::decode_cpu(imp, plan, table, row, out),
            Kind::Gpu(spec) => {
                let names = &mut self.memcpy_names;
                return gpu::decode_gpu(imp, names, (spec, table), row, out, slot);
            }
            Kind::CudaEvent => gpu::decode_cuda_event(imp, row, out.0),
            Kind::Launch { src } => return flows::decode_launch(imp, *src, row, out.0, slot),
            Kind::NvtxPushPop { emit } => {
                self.nvtx
                    .decode_range(imp, range(false, *emit), table, row, out)
            }
            Kind::NvtxStartEnd => self
                .nvtx
                .decode_range(imp, range(true, true), table, row, out),
            Kind::NvtxMark => self.nvtx.decode_mark(imp, table, row, out),
            Kind::Projection => projection::decode_projection(imp, row, out.0),
            Kind::Sample => samples::decode_sample(imp, row, out.0),
            Kind::Sched => instants::decode_sched(imp, row, out.0),
            Kind::GpuMetric => self.counters.decode_gpu_metric(imp, table, row, out),
            Kind::MemoryUsage => self.counters.decode_memory_usage(imp, row, out.0),
            Kind::Instant(spec) => instants::decode_instant(imp, spec, row, out.0),
        };
        *slot = decoded?;
        Ok(())
    }

    /// Side effects of emitting `event`, in time order; returns what to emit (or nothing).
    pub fn on_emit(
        &mut self,
        event: Event,
        hook: Hook,
        defs: &mut Defs,
        diag: &mut Diagnostics,
    ) -> Option<Event> {
        self.emitter
            .on_emit(event, hook, self.imp.keys(), defs, diag)
    }

    /// The key of the next event made at emission time.
    pub fn next_deferred(&self) -> Option<OrderKey> {
        self.emitter.next_deferred()
    }

    pub fn pop_deferred(&mut self) -> Option<Event> {
        self.emitter.pop_deferred()
    }

    /// Launches whose GPU work never came (none in a consistent file).
    pub fn pending_launches(&self) -> usize {
        self.emitter.pending_launches()
    }

    /// Names what is left once every row is read.
    pub fn finish(self, defs: &mut Defs) {
        self.imp.finish(defs);
    }
}
