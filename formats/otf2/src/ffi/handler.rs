//! What a read pushes to: the handler traits (definitions, events) and the plumbing every C
//! callback goes through, which turns a handler's error or panic into a stored error and
//! `OTF2_CALLBACK_INTERRUPT` instead of unwinding into C.

use std::ffi::CStr;
use std::os::raw::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use otf2_sys as sys;

use super::attrs::{read_list, AttrValue};
use super::error::{Otf2Error, Result};

/// The attributes of one event: (attribute definition, value).
pub type Attrs<'a> = &'a [(u32, AttrValue)];

/// A region definition.
#[derive(Clone, Copy, Debug)]
pub struct RegionDef {
    pub name: u32,
    pub canonical_name: u32,
    pub description: u32,
    pub role: u8,
    pub paradigm: u8,
    pub source_file: u32,
    pub begin_line: u32,
}

/// A metric member definition.
#[derive(Clone, Copy, Debug)]
pub struct MetricMemberDef {
    pub name: u32,
    pub description: u32,
    pub metric_type: u8,
    pub mode: u8,
    pub value_type: u8,
    pub base: u8,
    pub exponent: i64,
    pub unit: u32,
}

/// One value of a metric event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MetricVal {
    I64(i64),
    U64(u64),
    F64(f64),
}

/// The value of a parameter event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamVal {
    String(u32),
    Int(i64),
    UInt(u64),
}

/// Receives global definitions. References are passed as their raw numbers.
#[allow(unused_variables)]
pub trait DefHandler {
    fn clock_properties(
        &mut self,
        resolution: u64,
        offset: u64,
        length: u64,
        realtime: u64,
    ) -> Result<()> {
        Ok(())
    }
    fn string(&mut self, r: u32, s: &str) -> Result<()> {
        Ok(())
    }
    fn system_tree_node(&mut self, r: u32, name: u32, class: u32, parent: u32) -> Result<()> {
        Ok(())
    }
    fn system_tree_node_domain(&mut self, node: u32, domain: u8) -> Result<()> {
        Ok(())
    }
    fn system_tree_node_property(&mut self, node: u32, name: u32, value: AttrValue) -> Result<()> {
        Ok(())
    }
    fn location_group(&mut self, r: u32, name: u32, ty: u8, parent: u32) -> Result<()> {
        Ok(())
    }
    fn location_group_property(&mut self, group: u32, name: u32, value: AttrValue) -> Result<()> {
        Ok(())
    }
    fn location(&mut self, r: u64, name: u32, ty: u8, events: u64, group: u32) -> Result<()> {
        Ok(())
    }
    fn location_property(&mut self, location: u64, name: u32, value: AttrValue) -> Result<()> {
        Ok(())
    }
    fn region(&mut self, r: u32, def: &RegionDef) -> Result<()> {
        Ok(())
    }
    fn group(&mut self, r: u32, name: u32, ty: u8, paradigm: u8, members: &[u64]) -> Result<()> {
        Ok(())
    }
    fn comm(&mut self, r: u32, name: u32, group: u32, parent: u32) -> Result<()> {
        Ok(())
    }
    fn attribute(&mut self, r: u32, name: u32, description: u32, ty: u8) -> Result<()> {
        Ok(())
    }
    fn metric_member(&mut self, r: u32, def: &MetricMemberDef) -> Result<()> {
        Ok(())
    }
    fn metric_class(&mut self, r: u32, members: &[u32]) -> Result<()> {
        Ok(())
    }
    /// `scope_ty` is an `OTF2_MetricScope` (location, location group, system tree node, group).
    fn metric_instance(
        &mut self,
        r: u32,
        class: u32,
        recorder: u64,
        scope_ty: u8,
        scope: u64,
    ) -> Result<()> {
        Ok(())
    }
    fn rma_win(&mut self, r: u32, name: u32, comm: u32) -> Result<()> {
        Ok(())
    }
    fn calling_context(&mut self, r: u32, region: u32, parent: u32) -> Result<()> {
        Ok(())
    }
    fn parameter(&mut self, r: u32, name: u32, ty: u8) -> Result<()> {
        Ok(())
    }
    /// A regular file or a directory of the I/O records.
    fn io_file(&mut self, r: u32, name: u32) -> Result<()> {
        Ok(())
    }
    fn io_handle(&mut self, r: u32, name: u32, file: u32) -> Result<()> {
        Ok(())
    }
}

/// Receives events in global time order. `loc` is the location, `t` the raw timestamp.
#[allow(unused_variables, clippy::too_many_arguments)]
pub trait EventHandler {
    fn enter(&mut self, loc: u64, t: u64, attrs: Attrs, region: u32) -> Result<()> {
        Ok(())
    }
    fn leave(&mut self, loc: u64, t: u64, attrs: Attrs, region: u32) -> Result<()> {
        Ok(())
    }
    fn metric(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        metric: u32,
        values: &[MetricVal],
    ) -> Result<()> {
        Ok(())
    }
    /// A message sent (`request` is set for MpiIsend).
    fn mpi_send(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        receiver: u32,
        comm: u32,
        tag: u32,
        len: u64,
        request: Option<u64>,
    ) -> Result<()> {
        Ok(())
    }
    /// A message received (`request` is set for MpiIrecv).
    fn mpi_recv(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        sender: u32,
        comm: u32,
        tag: u32,
        len: u64,
        request: Option<u64>,
    ) -> Result<()> {
        Ok(())
    }
    /// An RMA put (`get == false`) or get issued to `remote` in window `win`.
    fn rma_transfer(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        get: bool,
        win: u32,
        remote: u32,
        bytes: u64,
        matching: u64,
    ) -> Result<()> {
        Ok(())
    }
    fn rma_op_complete(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        win: u32,
        matching: u64,
    ) -> Result<()> {
        Ok(())
    }
    fn parameter(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        parameter: u32,
        value: ParamVal,
    ) -> Result<()> {
        Ok(())
    }
    fn program_begin(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        name: u32,
        args: &[u32],
    ) -> Result<()> {
        Ok(())
    }
    fn program_end(&mut self, loc: u64, t: u64, attrs: Attrs, status: i64) -> Result<()> {
        Ok(())
    }
    fn calling_context_sample(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        context: u32,
        generator: u32,
    ) -> Result<()> {
        Ok(())
    }
    /// The end of an MPI collective operation (MpiCollectiveEnd, and
    /// NonBlockingCollectiveComplete): `op` an `OTF2_CollectiveOp`, `root` a rank or
    /// `OTF2_UNDEFINED_UINT32`.
    fn collective(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        op: u8,
        comm: u32,
        root: u32,
        sent: u64,
        received: u64,
    ) -> Result<()> {
        Ok(())
    }
    /// An I/O operation on `handle` began (`mode` an `OTF2_IoOperationMode`, `bytes`
    /// requested) or completed (`mode` None, `bytes` transferred).
    fn io_operation(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        handle: u32,
        mode: Option<u8>,
        bytes: u64,
    ) -> Result<()> {
        Ok(())
    }
    /// The measurement system turned measurement on or off.
    fn measurement(&mut self, loc: u64, t: u64, attrs: Attrs, on: bool) -> Result<()> {
        Ok(())
    }
    /// The measurement system flushed its buffer from `t` to `stop`.
    fn buffer_flush(&mut self, loc: u64, t: u64, attrs: Attrs, stop: u64) -> Result<()> {
        Ok(())
    }
    /// A fork (`threads` requested) or a join (`threads` None) of a thread team of `paradigm`
    /// (an `OTF2_Paradigm`).
    fn fork_join(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        paradigm: u8,
        threads: Option<u32>,
    ) -> Result<()> {
        Ok(())
    }
    /// A record whose content another record carries: request ids of non-blocking MPI calls,
    /// the begin of a collective (its end says what it did).
    fn bookkeeping(&mut self, loc: u64, t: u64, kind: &'static str) -> Result<()> {
        Ok(())
    }
    /// An event kind tracex does not map (tasks, locks, RMA synchronisation...).
    fn unmapped(&mut self, loc: u64, t: u64, kind: &'static str) -> Result<()> {
        Ok(())
    }
}

/// What a callback returns for a handler result, keeping the error for the caller.
fn outcome(
    slot: &mut Option<Otf2Error>,
    r: std::thread::Result<Result<()>>,
) -> sys::OTF2_CallbackCode {
    match r {
        Ok(Ok(())) => sys::OTF2_CALLBACK_SUCCESS,
        Ok(Err(e)) => {
            *slot = Some(e);
            sys::OTF2_CALLBACK_INTERRUPT
        }
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            *slot = Some(Otf2Error::other(format!(
                "internal error in a read callback: {msg}"
            )));
            sys::OTF2_CALLBACK_INTERRUPT
        }
    }
}

pub(super) struct DefCtx<'a> {
    pub(super) h: &'a mut dyn DefHandler,
    pub(super) error: Option<Otf2Error>,
}

/// Runs `f` on the definition handler behind `user`.
///
/// # Safety
/// `user` must be the `DefCtx` registered with the running read.
pub(super) unsafe fn def(
    user: *mut c_void,
    f: impl FnOnce(&mut dyn DefHandler) -> Result<()>,
) -> sys::OTF2_CallbackCode {
    // SAFETY: guaranteed by the caller; the context outlives the read.
    let ctx = unsafe { &mut *(user as *mut DefCtx) };
    let r = catch_unwind(AssertUnwindSafe(|| f(&mut *ctx.h)));
    outcome(&mut ctx.error, r)
}

pub(super) struct EvtCtx<'a> {
    pub(super) h: &'a mut dyn EventHandler,
    pub(super) attrs: Vec<(u32, AttrValue)>,
    pub(super) values: Vec<MetricVal>,
    pub(super) error: Option<Otf2Error>,
}

/// Runs `f` on the event handler behind `user` with the decoded attributes of `list`.
///
/// # Safety
/// `user` must be the `EvtCtx` registered with the running read and `list` NULL or the
/// attribute list libotf2 passed to the callback.
pub(super) unsafe fn evt(
    user: *mut c_void,
    list: *mut sys::OTF2_AttributeList,
    f: impl FnOnce(&mut dyn EventHandler, Attrs) -> Result<()>,
) -> sys::OTF2_CallbackCode {
    // SAFETY: guaranteed by the caller.
    let ctx = unsafe { &mut *(user as *mut EvtCtx) };
    let mut attrs = std::mem::take(&mut ctx.attrs);
    // SAFETY: guaranteed by the caller.
    unsafe { read_list(list, &mut attrs) };
    let r = catch_unwind(AssertUnwindSafe(|| f(&mut *ctx.h, &attrs)));
    ctx.attrs = attrs;
    outcome(&mut ctx.error, r)
}

/// # Safety
/// `s` must be NULL or a NUL-terminated string.
pub(super) unsafe fn text<'a>(s: *const c_char) -> std::borrow::Cow<'a, str> {
    if s.is_null() {
        return "".into();
    }
    // SAFETY: guaranteed by the caller.
    unsafe { CStr::from_ptr(s) }.to_string_lossy()
}

/// # Safety
/// `p` must point to `n` elements, or `n` must be 0.
pub(super) unsafe fn slice<'a, T>(p: *const T, n: usize) -> &'a [T] {
    if n == 0 || p.is_null() {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(p, n) }
    }
}
