//! Reading an archive through libotf2: global definitions and then all events in time order,
//! pushed to Rust handler traits by C callbacks.
//!
//! Callbacks never unwind into C: a handler error or panic is stored, the callback returns
//! `OTF2_CALLBACK_INTERRUPT`, and the read returns that error.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_void};
use std::path::Path;
use std::ptr::NonNull;

use otf2_sys as sys;

use super::attrs::AttrValue;
use super::error::{check, init, null_handle, Otf2Error, Result};
use super::handler::{def, evt, slice, text, DefCtx, EvtCtx};
pub use super::handler::{
    Attrs, DefHandler, EventHandler, MetricMemberDef, MetricVal, ParamVal, RegionDef,
};
use super::unmapped::{register_bookkeeping, register_unmapped};

extern "C" {
    /// Releases strings libotf2 allocated with malloc (creator, properties).
    fn free(p: *mut c_void);
}

mod def_cb {
    //! C callbacks for global definitions.
    use super::*;
    type U = *mut c_void;
    type Code = sys::OTF2_CallbackCode;

    pub unsafe extern "C" fn clock(u: U, res: u64, off: u64, len: u64, rt: u64) -> Code {
        unsafe { def(u, |h| h.clock_properties(res, off, len, rt)) }
    }
    pub unsafe extern "C" fn string(u: U, r: sys::OTF2_StringRef, s: *const c_char) -> Code {
        unsafe { def(u, |h| h.string(r.0, &text(s))) }
    }
    pub unsafe extern "C" fn stn(
        u: U,
        r: sys::OTF2_SystemTreeNodeRef,
        name: sys::OTF2_StringRef,
        class: sys::OTF2_StringRef,
        parent: sys::OTF2_SystemTreeNodeRef,
    ) -> Code {
        unsafe { def(u, |h| h.system_tree_node(r.0, name.0, class.0, parent.0)) }
    }
    pub unsafe extern "C" fn stn_domain(
        u: U,
        r: sys::OTF2_SystemTreeNodeRef,
        d: sys::OTF2_SystemTreeDomain,
    ) -> Code {
        unsafe { def(u, |h| h.system_tree_node_domain(r.0, d)) }
    }
    pub unsafe extern "C" fn stn_prop(
        u: U,
        r: sys::OTF2_SystemTreeNodeRef,
        name: sys::OTF2_StringRef,
        ty: sys::OTF2_Type,
        v: sys::OTF2_AttributeValue,
    ) -> Code {
        unsafe {
            def(u, |h| {
                h.system_tree_node_property(r.0, name.0, AttrValue::from_raw(ty, v))
            })
        }
    }
    pub unsafe extern "C" fn group_loc(
        u: U,
        r: sys::OTF2_LocationGroupRef,
        name: sys::OTF2_StringRef,
        ty: sys::OTF2_LocationGroupType,
        parent: sys::OTF2_SystemTreeNodeRef,
        _creator: sys::OTF2_LocationGroupRef,
    ) -> Code {
        unsafe { def(u, |h| h.location_group(r.0, name.0, ty, parent.0)) }
    }
    pub unsafe extern "C" fn group_loc_prop(
        u: U,
        g: sys::OTF2_LocationGroupRef,
        name: sys::OTF2_StringRef,
        ty: sys::OTF2_Type,
        v: sys::OTF2_AttributeValue,
    ) -> Code {
        unsafe {
            def(u, |h| {
                h.location_group_property(g.0, name.0, AttrValue::from_raw(ty, v))
            })
        }
    }
    pub unsafe extern "C" fn location(
        u: U,
        r: sys::OTF2_LocationRef,
        name: sys::OTF2_StringRef,
        ty: sys::OTF2_LocationType,
        n: u64,
        g: sys::OTF2_LocationGroupRef,
    ) -> Code {
        unsafe { def(u, |h| h.location(r.0, name.0, ty, n, g.0)) }
    }
    pub unsafe extern "C" fn location_prop(
        u: U,
        l: sys::OTF2_LocationRef,
        name: sys::OTF2_StringRef,
        ty: sys::OTF2_Type,
        v: sys::OTF2_AttributeValue,
    ) -> Code {
        unsafe {
            def(u, |h| {
                h.location_property(l.0, name.0, AttrValue::from_raw(ty, v))
            })
        }
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn region(
        u: U,
        r: sys::OTF2_RegionRef,
        name: sys::OTF2_StringRef,
        canonical: sys::OTF2_StringRef,
        descr: sys::OTF2_StringRef,
        role: sys::OTF2_RegionRole,
        paradigm: sys::OTF2_Paradigm,
        _flags: sys::OTF2_RegionFlag,
        file: sys::OTF2_StringRef,
        begin: u32,
        _end: u32,
    ) -> Code {
        let d = RegionDef {
            name: name.0,
            canonical_name: canonical.0,
            description: descr.0,
            role,
            paradigm,
            source_file: file.0,
            begin_line: begin,
        };
        unsafe { def(u, |h| h.region(r.0, &d)) }
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn group(
        u: U,
        r: sys::OTF2_GroupRef,
        name: sys::OTF2_StringRef,
        ty: sys::OTF2_GroupType,
        paradigm: sys::OTF2_Paradigm,
        _flags: sys::OTF2_GroupFlag,
        n: u32,
        members: *const u64,
    ) -> Code {
        unsafe {
            def(u, |h| {
                h.group(r.0, name.0, ty, paradigm, slice(members, n as usize))
            })
        }
    }
    pub unsafe extern "C" fn comm(
        u: U,
        r: sys::OTF2_CommRef,
        name: sys::OTF2_StringRef,
        group: sys::OTF2_GroupRef,
        parent: sys::OTF2_CommRef,
        _flags: sys::OTF2_CommFlag,
    ) -> Code {
        unsafe { def(u, |h| h.comm(r.0, name.0, group.0, parent.0)) }
    }
    pub unsafe extern "C" fn attribute(
        u: U,
        r: sys::OTF2_AttributeRef,
        name: sys::OTF2_StringRef,
        descr: sys::OTF2_StringRef,
        ty: sys::OTF2_Type,
    ) -> Code {
        unsafe { def(u, |h| h.attribute(r.0, name.0, descr.0, ty)) }
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn metric_member(
        u: U,
        r: sys::OTF2_MetricMemberRef,
        name: sys::OTF2_StringRef,
        descr: sys::OTF2_StringRef,
        metric_type: sys::OTF2_MetricType,
        mode: sys::OTF2_MetricMode,
        value_type: sys::OTF2_Type,
        base: sys::OTF2_Base,
        exponent: i64,
        unit: sys::OTF2_StringRef,
    ) -> Code {
        let d = MetricMemberDef {
            name: name.0,
            description: descr.0,
            metric_type,
            mode,
            value_type,
            base,
            exponent,
            unit: unit.0,
        };
        unsafe { def(u, |h| h.metric_member(r.0, &d)) }
    }
    pub unsafe extern "C" fn metric_class(
        u: U,
        r: sys::OTF2_MetricRef,
        n: u8,
        members: *const sys::OTF2_MetricMemberRef,
        _occ: sys::OTF2_MetricOccurrence,
        _kind: sys::OTF2_RecorderKind,
    ) -> Code {
        let m: Vec<u32> = unsafe { slice(members, n as usize) }
            .iter()
            .map(|m| m.0)
            .collect();
        unsafe { def(u, |h| h.metric_class(r.0, &m)) }
    }
    pub unsafe extern "C" fn metric_instance(
        u: U,
        r: sys::OTF2_MetricRef,
        class: sys::OTF2_MetricRef,
        recorder: sys::OTF2_LocationRef,
        scope_ty: sys::OTF2_MetricScope,
        scope: u64,
    ) -> Code {
        unsafe {
            def(u, |h| {
                h.metric_instance(r.0, class.0, recorder.0, scope_ty, scope)
            })
        }
    }
    pub unsafe extern "C" fn rma_win(
        u: U,
        r: sys::OTF2_RmaWinRef,
        name: sys::OTF2_StringRef,
        comm: sys::OTF2_CommRef,
        _flags: sys::OTF2_RmaWinFlag,
    ) -> Code {
        unsafe { def(u, |h| h.rma_win(r.0, name.0, comm.0)) }
    }
    pub unsafe extern "C" fn calling_context(
        u: U,
        r: sys::OTF2_CallingContextRef,
        region: sys::OTF2_RegionRef,
        _scl: sys::OTF2_SourceCodeLocationRef,
        parent: sys::OTF2_CallingContextRef,
    ) -> Code {
        unsafe { def(u, |h| h.calling_context(r.0, region.0, parent.0)) }
    }
    pub unsafe extern "C" fn parameter(
        u: U,
        r: sys::OTF2_ParameterRef,
        name: sys::OTF2_StringRef,
        ty: sys::OTF2_ParameterType,
    ) -> Code {
        unsafe { def(u, |h| h.parameter(r.0, name.0, ty)) }
    }
    /// IoRegularFile and IoDirectory definitions (the same fields).
    pub unsafe extern "C" fn io_file(
        u: U,
        r: sys::OTF2_IoFileRef,
        name: sys::OTF2_StringRef,
        _scope: sys::OTF2_SystemTreeNodeRef,
    ) -> Code {
        // SAFETY: `u` is the DefCtx of the running read.
        unsafe { def(u, |h| h.io_file(r.0, name.0)) }
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn io_handle(
        u: U,
        r: sys::OTF2_IoHandleRef,
        name: sys::OTF2_StringRef,
        file: sys::OTF2_IoFileRef,
        _paradigm: sys::OTF2_IoParadigmRef,
        _flags: sys::OTF2_IoHandleFlag,
        _comm: sys::OTF2_CommRef,
        _parent: sys::OTF2_IoHandleRef,
    ) -> Code {
        // SAFETY: `u` is the DefCtx of the running read.
        unsafe { def(u, |h| h.io_handle(r.0, name.0, file.0)) }
    }
}

mod evt_cb {
    //! C callbacks for events.
    use super::*;
    type U = *mut c_void;
    type L = *mut sys::OTF2_AttributeList;
    type Loc = sys::OTF2_LocationRef;
    type Code = sys::OTF2_CallbackCode;

    pub unsafe extern "C" fn enter(l: Loc, t: u64, u: U, a: L, r: sys::OTF2_RegionRef) -> Code {
        unsafe { evt(u, a, |h, a| h.enter(l.0, t, a, r.0)) }
    }
    pub unsafe extern "C" fn leave(l: Loc, t: u64, u: U, a: L, r: sys::OTF2_RegionRef) -> Code {
        unsafe { evt(u, a, |h, a| h.leave(l.0, t, a, r.0)) }
    }
    pub unsafe extern "C" fn metric(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        m: sys::OTF2_MetricRef,
        n: u8,
        types: *const sys::OTF2_Type,
        values: *const sys::OTF2_MetricValue,
    ) -> Code {
        // SAFETY: `u` is our EvtCtx; the arrays hold `n` elements.
        let ctx = unsafe { &mut *(u as *mut EvtCtx) };
        let mut vals = std::mem::take(&mut ctx.values);
        vals.clear();
        let (types, values) = unsafe { (slice(types, n as usize), slice(values, n as usize)) };
        for (ty, v) in types.iter().zip(values) {
            // SAFETY: the type id says which union field is valid.
            vals.push(unsafe {
                match *ty as u32 {
                    sys::OTF2_TYPE_INT64 => MetricVal::I64(v.signed_int),
                    sys::OTF2_TYPE_DOUBLE => MetricVal::F64(v.floating_point),
                    _ => MetricVal::U64(v.unsigned_int),
                }
            });
        }
        let code = unsafe { evt(u, a, |h, a| h.metric(l.0, t, a, m.0, &vals)) };
        // SAFETY: as above; `evt` has returned.
        unsafe { (*(u as *mut EvtCtx)).values = vals };
        code
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn mpi_send(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        to: u32,
        c: sys::OTF2_CommRef,
        tag: u32,
        len: u64,
    ) -> Code {
        unsafe { evt(u, a, |h, a| h.mpi_send(l.0, t, a, to, c.0, tag, len, None)) }
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn mpi_isend(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        to: u32,
        c: sys::OTF2_CommRef,
        tag: u32,
        len: u64,
        req: u64,
    ) -> Code {
        unsafe {
            evt(u, a, |h, a| {
                h.mpi_send(l.0, t, a, to, c.0, tag, len, Some(req))
            })
        }
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn mpi_recv(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        from: u32,
        c: sys::OTF2_CommRef,
        tag: u32,
        len: u64,
    ) -> Code {
        unsafe {
            evt(u, a, |h, a| {
                h.mpi_recv(l.0, t, a, from, c.0, tag, len, None)
            })
        }
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn mpi_irecv(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        from: u32,
        c: sys::OTF2_CommRef,
        tag: u32,
        len: u64,
        req: u64,
    ) -> Code {
        unsafe {
            evt(u, a, |h, a| {
                h.mpi_recv(l.0, t, a, from, c.0, tag, len, Some(req))
            })
        }
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn rma_put(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        w: sys::OTF2_RmaWinRef,
        remote: u32,
        bytes: u64,
        id: u64,
    ) -> Code {
        unsafe {
            evt(u, a, |h, a| {
                h.rma_transfer(l.0, t, a, false, w.0, remote, bytes, id)
            })
        }
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn rma_get(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        w: sys::OTF2_RmaWinRef,
        remote: u32,
        bytes: u64,
        id: u64,
    ) -> Code {
        unsafe {
            evt(u, a, |h, a| {
                h.rma_transfer(l.0, t, a, true, w.0, remote, bytes, id)
            })
        }
    }
    pub unsafe extern "C" fn rma_complete(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        w: sys::OTF2_RmaWinRef,
        id: u64,
    ) -> Code {
        unsafe { evt(u, a, |h, a| h.rma_op_complete(l.0, t, a, w.0, id)) }
    }
    pub unsafe extern "C" fn param_string(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        p: sys::OTF2_ParameterRef,
        s: sys::OTF2_StringRef,
    ) -> Code {
        unsafe {
            evt(u, a, |h, a| {
                h.parameter(l.0, t, a, p.0, ParamVal::String(s.0))
            })
        }
    }
    pub unsafe extern "C" fn param_int(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        p: sys::OTF2_ParameterRef,
        v: i64,
    ) -> Code {
        unsafe { evt(u, a, |h, a| h.parameter(l.0, t, a, p.0, ParamVal::Int(v))) }
    }
    pub unsafe extern "C" fn param_uint(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        p: sys::OTF2_ParameterRef,
        v: u64,
    ) -> Code {
        unsafe { evt(u, a, |h, a| h.parameter(l.0, t, a, p.0, ParamVal::UInt(v))) }
    }
    pub unsafe extern "C" fn program_begin(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        name: sys::OTF2_StringRef,
        n: u32,
        args: *const sys::OTF2_StringRef,
    ) -> Code {
        let args: Vec<u32> = unsafe { slice(args, n as usize) }
            .iter()
            .map(|s| s.0)
            .collect();
        unsafe { evt(u, a, |h, a| h.program_begin(l.0, t, a, name.0, &args)) }
    }
    pub unsafe extern "C" fn program_end(l: Loc, t: u64, u: U, a: L, status: i64) -> Code {
        unsafe { evt(u, a, |h, a| h.program_end(l.0, t, a, status)) }
    }
    pub unsafe extern "C" fn sample(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        cc: sys::OTF2_CallingContextRef,
        _unwind: u32,
        g: sys::OTF2_InterruptGeneratorRef,
    ) -> Code {
        unsafe { evt(u, a, |h, a| h.calling_context_sample(l.0, t, a, cc.0, g.0)) }
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn collective_end(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        op: sys::OTF2_CollectiveOp,
        c: sys::OTF2_CommRef,
        root: u32,
        sent: u64,
        received: u64,
    ) -> Code {
        // SAFETY: `u` is the EvtCtx of the running read, `a` libotf2's attribute list.
        unsafe {
            evt(u, a, |h, a| {
                h.collective(l.0, t, a, op, c.0, root, sent, received)
            })
        }
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn nbc_complete(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        op: sys::OTF2_CollectiveOp,
        c: sys::OTF2_CommRef,
        root: u32,
        sent: u64,
        received: u64,
        _req: u64,
    ) -> Code {
        // SAFETY: as in `collective_end`.
        unsafe {
            evt(u, a, |h, a| {
                h.collective(l.0, t, a, op, c.0, root, sent, received)
            })
        }
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn io_begin(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        handle: sys::OTF2_IoHandleRef,
        mode: sys::OTF2_IoOperationMode,
        _flags: sys::OTF2_IoOperationFlag,
        bytes: u64,
        _matching: u64,
    ) -> Code {
        // SAFETY: as in `collective_end`.
        unsafe {
            evt(u, a, |h, a| {
                h.io_operation(l.0, t, a, handle.0, Some(mode), bytes)
            })
        }
    }
    pub unsafe extern "C" fn io_complete(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        handle: sys::OTF2_IoHandleRef,
        bytes: u64,
        _matching: u64,
    ) -> Code {
        // SAFETY: as in `collective_end`.
        unsafe {
            evt(u, a, |h, a| {
                h.io_operation(l.0, t, a, handle.0, None, bytes)
            })
        }
    }
    pub unsafe extern "C" fn measurement(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        mode: sys::OTF2_MeasurementMode,
    ) -> Code {
        let on = mode == sys::OTF2_MEASUREMENT_ON as sys::OTF2_MeasurementMode;
        // SAFETY: as in `collective_end`.
        unsafe { evt(u, a, |h, a| h.measurement(l.0, t, a, on)) }
    }
    pub unsafe extern "C" fn buffer_flush(l: Loc, t: u64, u: U, a: L, stop: u64) -> Code {
        // SAFETY: as in `collective_end`.
        unsafe { evt(u, a, |h, a| h.buffer_flush(l.0, t, a, stop)) }
    }
    pub unsafe extern "C" fn thread_fork(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        model: sys::OTF2_Paradigm,
        threads: u32,
    ) -> Code {
        // SAFETY: as in `collective_end`.
        unsafe { evt(u, a, |h, a| h.fork_join(l.0, t, a, model, Some(threads))) }
    }
    pub unsafe extern "C" fn thread_join(
        l: Loc,
        t: u64,
        u: U,
        a: L,
        model: sys::OTF2_Paradigm,
    ) -> Code {
        // SAFETY: as in `collective_end`.
        unsafe { evt(u, a, |h, a| h.fork_join(l.0, t, a, model, None)) }
    }
    pub unsafe extern "C" fn omp_fork(l: Loc, t: u64, u: U, a: L, threads: u32) -> Code {
        let model = sys::OTF2_PARADIGM_OPENMP as sys::OTF2_Paradigm;
        // SAFETY: as in `collective_end`.
        unsafe { evt(u, a, |h, a| h.fork_join(l.0, t, a, model, Some(threads))) }
    }
    pub unsafe extern "C" fn omp_join(l: Loc, t: u64, u: U, a: L) -> Code {
        let model = sys::OTF2_PARADIGM_OPENMP as sys::OTF2_Paradigm;
        // SAFETY: as in `collective_end`.
        unsafe { evt(u, a, |h, a| h.fork_join(l.0, t, a, model, None)) }
    }
}

/// Registers callbacks, then reads; returns the read's code, which the caller checks after the
/// error a callback kept (that error is the real cause of an interrupted read).
fn register_and_read(
    register: impl FnOnce() -> sys::OTF2_ErrorCode,
    what: &str,
    read: impl FnOnce() -> sys::OTF2_ErrorCode,
) -> Result<sys::OTF2_ErrorCode> {
    check(register(), what)?;
    Ok(read())
}

/// An open archive.
pub struct Reader {
    raw: NonNull<sys::OTF2_Reader>,
}

macro_rules! set {
    ($cbs:ident, $setter:ident, $f:expr) => {
        // SAFETY: registers a callback with the exact signature libotf2 declares.
        check(unsafe { sys::$setter($cbs, Some($f)) }, stringify!($setter))?
    };
}

impl Reader {
    /// Opens the archive whose anchor file is `anchor`.
    pub fn open(anchor: &Path) -> Result<Reader> {
        init();
        // libotf2 leaks its half-made archive when the anchor cannot be opened: ask first.
        if let Err(e) = std::fs::File::open(anchor) {
            return Err(Otf2Error {
                message: Some(format!("{}: {e}", anchor.display())),
                ..Otf2Error::other("OTF2_Reader_Open")
            });
        }
        let c = CString::new(anchor.to_string_lossy().as_bytes())
            .map_err(|_| Otf2Error::other("archive path contains a NUL byte"))?;
        // SAFETY: a valid C string.
        let raw = unsafe { sys::OTF2_Reader_Open(c.as_ptr()) };
        let raw = NonNull::new(raw).ok_or_else(|| null_handle("OTF2_Reader_Open"))?;
        let r = Reader { raw };
        // SAFETY: live reader.
        check(
            unsafe { sys::OTF2_Reader_SetSerialCollectiveCallbacks(r.ptr()) },
            "OTF2_Reader_SetSerialCollectiveCallbacks",
        )?;
        Ok(r)
    }

    fn ptr(&self) -> *mut sys::OTF2_Reader {
        self.raw.as_ptr()
    }

    /// The OTF2 version that wrote the archive.
    pub fn version(&self) -> Result<(u8, u8, u8)> {
        let (mut a, mut b, mut c) = (0, 0, 0);
        // SAFETY: live reader, plain out-parameters.
        check(
            unsafe { sys::OTF2_Reader_GetVersion(self.ptr(), &mut a, &mut b, &mut c) },
            "OTF2_Reader_GetVersion",
        )?;
        Ok((a, b, c))
    }

    pub fn number_of_locations(&self) -> Result<u64> {
        let mut n = 0;
        // SAFETY: live reader, plain out-parameter.
        check(
            unsafe { sys::OTF2_Reader_GetNumberOfLocations(self.ptr(), &mut n) },
            "OTF2_Reader_GetNumberOfLocations",
        )?;
        Ok(n)
    }

    /// Takes a string libotf2 allocated with malloc.
    fn owned(p: *mut c_char) -> Option<String> {
        if p.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated string from libotf2, released exactly once.
        unsafe {
            let s = CStr::from_ptr(p).to_string_lossy().into_owned();
            free(p as *mut c_void);
            Some(s)
        }
    }

    pub fn creator(&self) -> Result<Option<String>> {
        let mut p = std::ptr::null_mut();
        // SAFETY: live reader; the string is released by `owned`.
        check(
            unsafe { sys::OTF2_Reader_GetCreator(self.ptr(), &mut p) },
            "OTF2_Reader_GetCreator",
        )?;
        Ok(Self::owned(p).filter(|s| !s.is_empty()))
    }

    /// Every trace file property as (name, value).
    pub fn properties(&self) -> Result<Vec<(String, String)>> {
        let mut n = 0u32;
        let mut names: *mut *mut c_char = std::ptr::null_mut();
        // SAFETY: live reader; `names` is one malloc'd block released below.
        check(
            unsafe { sys::OTF2_Reader_GetPropertyNames(self.ptr(), &mut n, &mut names) },
            "OTF2_Reader_GetPropertyNames",
        )?;
        let mut out = Vec::new();
        for i in 0..n as usize {
            // SAFETY: `names` holds `n` string pointers into the same block.
            let name = unsafe { CStr::from_ptr(*names.add(i)) }.to_owned();
            let mut v = std::ptr::null_mut();
            // SAFETY: live reader; the value is released by `owned`.
            let rc = unsafe { sys::OTF2_Reader_GetProperty(self.ptr(), name.as_ptr(), &mut v) };
            if let Err(e) = check(rc, "OTF2_Reader_GetProperty") {
                // SAFETY: releases the names block once.
                unsafe { free(names as *mut c_void) };
                return Err(e);
            }
            out.push((
                name.to_string_lossy().into_owned(),
                Self::owned(v).unwrap_or_default(),
            ));
        }
        if !names.is_null() {
            // SAFETY: "To release memory, just pass *names to free" (OTF2_Reader.h).
            unsafe { free(names as *mut c_void) };
        }
        Ok(out)
    }

    /// Reads the global definitions into `h`.
    pub fn read_global_defs(&mut self, h: &mut dyn DefHandler) -> Result<()> {
        // SAFETY: live reader.
        let gdr = unsafe { sys::OTF2_Reader_GetGlobalDefReader(self.ptr()) };
        if gdr.is_null() {
            return Err(null_handle("OTF2_Reader_GetGlobalDefReader"));
        }
        // SAFETY: plain constructor.
        let cbs = unsafe { sys::OTF2_GlobalDefReaderCallbacks_New() };
        if cbs.is_null() {
            return Err(null_handle("OTF2_GlobalDefReaderCallbacks_New"));
        }
        let r = (|| {
            use def_cb::*;
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback,
                clock
            );
            set!(cbs, OTF2_GlobalDefReaderCallbacks_SetStringCallback, string);
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeCallback,
                stn
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeDomainCallback,
                stn_domain
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodePropertyCallback,
                stn_prop
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback,
                group_loc
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetLocationGroupPropertyCallback,
                group_loc_prop
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetLocationCallback,
                location
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetLocationPropertyCallback,
                location_prop
            );
            set!(cbs, OTF2_GlobalDefReaderCallbacks_SetRegionCallback, region);
            set!(cbs, OTF2_GlobalDefReaderCallbacks_SetGroupCallback, group);
            set!(cbs, OTF2_GlobalDefReaderCallbacks_SetCommCallback, comm);
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetAttributeCallback,
                attribute
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetMetricMemberCallback,
                metric_member
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetMetricClassCallback,
                metric_class
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetMetricInstanceCallback,
                metric_instance
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetRmaWinCallback,
                rma_win
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetCallingContextCallback,
                calling_context
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetParameterCallback,
                parameter
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetIoRegularFileCallback,
                io_file
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetIoDirectoryCallback,
                io_file
            );
            set!(
                cbs,
                OTF2_GlobalDefReaderCallbacks_SetIoHandleCallback,
                io_handle
            );
            let mut ctx = DefCtx { h, error: None };
            let user = &mut ctx as *mut DefCtx as *mut c_void;
            let rc = register_and_read(
                // SAFETY: `user` (ctx) outlives the read, the only user of the pointer.
                || unsafe {
                    sys::OTF2_Reader_RegisterGlobalDefCallbacks(self.ptr(), gdr, cbs, user)
                },
                "OTF2_Reader_RegisterGlobalDefCallbacks",
                // SAFETY: live reader and definition reader.
                || unsafe { sys::OTF2_Reader_ReadAllGlobalDefinitions(self.ptr(), gdr, &mut 0) },
            )?;
            ctx.error.take().map_or(Ok(()), Err)?;
            check(rc, "OTF2_Reader_ReadAllGlobalDefinitions")
        })();
        // SAFETY: created above, released once.
        unsafe { sys::OTF2_GlobalDefReaderCallbacks_Delete(cbs) };
        // SAFETY: live reader and its definition reader.
        let closed = check(
            unsafe { sys::OTF2_Reader_CloseGlobalDefReader(self.ptr(), gdr) },
            "OTF2_Reader_CloseGlobalDefReader",
        );
        r.and(closed)
    }

    /// Reads every event of `locations` in global time order into `h`. Local definitions
    /// (mapping tables, clock offsets) are applied by libotf2. Returns the locations whose local
    /// definitions could not be read. (How many records each location holds is its definition's
    /// `numberOfEvents`: the local readers cannot be asked, the global reader frees them.)
    pub fn read_events(
        &mut self,
        locations: &[u64],
        h: &mut dyn EventHandler,
    ) -> Result<EventsRead> {
        for &l in locations {
            // SAFETY: live reader.
            check(
                unsafe { sys::OTF2_Reader_SelectLocation(self.ptr(), sys::OTF2_LocationRef(l)) },
                "OTF2_Reader_SelectLocation",
            )?;
        }
        let mut out = EventsRead::default();
        // Local definition files are optional: archives without them read fine.
        // SAFETY: live reader.
        let defs_open = unsafe { sys::OTF2_Reader_OpenDefFiles(self.ptr()) }
            == sys::OTF2_ErrorCode::OTF2_SUCCESS;
        // SAFETY: live reader.
        check(
            unsafe { sys::OTF2_Reader_OpenEvtFiles(self.ptr()) },
            "OTF2_Reader_OpenEvtFiles",
        )?;
        for &l in locations {
            if defs_open {
                // SAFETY: live reader with open definition files.
                let dr =
                    unsafe { sys::OTF2_Reader_GetDefReader(self.ptr(), sys::OTF2_LocationRef(l)) };
                if !dr.is_null() {
                    let mut n = 0;
                    // SAFETY: live reader and definition reader.
                    let rc =
                        unsafe { sys::OTF2_Reader_ReadAllLocalDefinitions(self.ptr(), dr, &mut n) };
                    // SAFETY: closes the reader opened above.
                    let closed = unsafe { sys::OTF2_Reader_CloseDefReader(self.ptr(), dr) };
                    // Optional data: a failure is reported, the events are still read.
                    if let Err(e) = check(rc, "OTF2_Reader_ReadAllLocalDefinitions")
                        .and(check(closed, "OTF2_Reader_CloseDefReader"))
                    {
                        out.local_def_errors.push((l, e));
                    }
                }
            }
            // SAFETY: live reader with open event files.
            let er = unsafe { sys::OTF2_Reader_GetEvtReader(self.ptr(), sys::OTF2_LocationRef(l)) };
            if er.is_null() {
                return Err(null_handle("OTF2_Reader_GetEvtReader"));
            }
            // The global reader owns the local one from here on: it frees each local reader
            // when that location's events are exhausted, so `er` must not be used again.
        }
        if defs_open {
            // SAFETY: live reader.
            check(
                unsafe { sys::OTF2_Reader_CloseDefFiles(self.ptr()) },
                "OTF2_Reader_CloseDefFiles",
            )?;
        }
        // SAFETY: live reader with event readers for the selected locations.
        let ger = unsafe { sys::OTF2_Reader_GetGlobalEvtReader(self.ptr()) };
        if ger.is_null() {
            return Err(null_handle("OTF2_Reader_GetGlobalEvtReader"));
        }
        // SAFETY: plain constructor.
        let cbs = unsafe { sys::OTF2_GlobalEvtReaderCallbacks_New() };
        if cbs.is_null() {
            return Err(null_handle("OTF2_GlobalEvtReaderCallbacks_New"));
        }
        let r = (|| {
            use evt_cb::*;
            set!(cbs, OTF2_GlobalEvtReaderCallbacks_SetEnterCallback, enter);
            set!(cbs, OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback, leave);
            set!(cbs, OTF2_GlobalEvtReaderCallbacks_SetMetricCallback, metric);
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetMpiSendCallback,
                mpi_send
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCallback,
                mpi_isend
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetMpiRecvCallback,
                mpi_recv
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvCallback,
                mpi_irecv
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetRmaPutCallback,
                rma_put
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetRmaGetCallback,
                rma_get
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetRmaOpCompleteBlockingCallback,
                rma_complete
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetRmaOpCompleteNonBlockingCallback,
                rma_complete
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetParameterStringCallback,
                param_string
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetParameterIntCallback,
                param_int
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetParameterUnsignedIntCallback,
                param_uint
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetProgramBeginCallback,
                program_begin
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetProgramEndCallback,
                program_end
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetCallingContextSampleCallback,
                sample
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveEndCallback,
                collective_end
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetNonBlockingCollectiveCompleteCallback,
                nbc_complete
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetIoOperationBeginCallback,
                io_begin
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetIoOperationCompleteCallback,
                io_complete
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetMeasurementOnOffCallback,
                measurement
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetBufferFlushCallback,
                buffer_flush
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetThreadForkCallback,
                thread_fork
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetThreadJoinCallback,
                thread_join
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetOmpForkCallback,
                omp_fork
            );
            set!(
                cbs,
                OTF2_GlobalEvtReaderCallbacks_SetOmpJoinCallback,
                omp_join
            );
            register_bookkeeping(cbs)?;
            register_unmapped(cbs)?;
            let mut ctx = EvtCtx {
                h,
                attrs: Vec::new(),
                values: Vec::new(),
                error: None,
            };
            let user = &mut ctx as *mut EvtCtx as *mut c_void;
            let rc = register_and_read(
                // SAFETY: `user` (ctx) outlives the read, the only user of the pointer.
                || unsafe {
                    sys::OTF2_Reader_RegisterGlobalEvtCallbacks(self.ptr(), ger, cbs, user)
                },
                "OTF2_Reader_RegisterGlobalEvtCallbacks",
                // SAFETY: live reader and global event reader.
                || unsafe { sys::OTF2_Reader_ReadAllGlobalEvents(self.ptr(), ger, &mut 0) },
            )?;
            ctx.error.take().map_or(Ok(()), Err)?;
            check(rc, "OTF2_Reader_ReadAllGlobalEvents")
        })();
        // SAFETY: created above, released once.
        unsafe { sys::OTF2_GlobalEvtReaderCallbacks_Delete(cbs) };
        r?;
        // SAFETY: live reader and its global event reader, closed once.
        check(
            unsafe { sys::OTF2_Reader_CloseGlobalEvtReader(self.ptr(), ger) },
            "OTF2_Reader_CloseGlobalEvtReader",
        )?;
        // SAFETY: live reader.
        check(
            unsafe { sys::OTF2_Reader_CloseEvtFiles(self.ptr()) },
            "OTF2_Reader_CloseEvtFiles",
        )?;
        Ok(out)
    }
}

/// What [`Reader::read_events`] reports besides the events.
#[derive(Debug, Default)]
pub struct EventsRead {
    pub local_def_errors: Vec<(u64, Otf2Error)>,
}

impl Drop for Reader {
    fn drop(&mut self) {
        // SAFETY: closes the reader once.
        let _ = unsafe { sys::OTF2_Reader_Close(self.ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::writer::tests::write_tiny;

    #[derive(Default)]
    struct Collect {
        strings: Vec<(u32, String)>,
        locations: Vec<u64>,
        clock: Option<(u64, u64, u64)>,
        events: Vec<String>,
    }

    impl DefHandler for Collect {
        fn clock_properties(&mut self, res: u64, off: u64, len: u64, _rt: u64) -> Result<()> {
            self.clock = Some((res, off, len));
            Ok(())
        }
        fn string(&mut self, r: u32, s: &str) -> Result<()> {
            self.strings.push((r, s.to_string()));
            Ok(())
        }
        fn location(&mut self, r: u64, _n: u32, _ty: u8, _e: u64, _g: u32) -> Result<()> {
            self.locations.push(r);
            Ok(())
        }
    }

    impl EventHandler for Collect {
        fn enter(&mut self, loc: u64, t: u64, attrs: Attrs, region: u32) -> Result<()> {
            self.events
                .push(format!("enter {loc} {t} {region} {attrs:?}"));
            Ok(())
        }
        fn leave(&mut self, loc: u64, t: u64, _a: Attrs, region: u32) -> Result<()> {
            if t == 1_600 && loc == 999 {
                panic!("never");
            }
            self.events.push(format!("leave {loc} {t} {region}"));
            Ok(())
        }
    }

    #[test]
    fn reads_back_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        write_tiny(dir.path()).unwrap();
        let mut r = Reader::open(&dir.path().join("traces.otf2")).unwrap();
        assert_eq!(r.creator().unwrap().as_deref(), Some("tracex test"));
        assert_eq!(r.version().unwrap().0, 3);
        let mut c = Collect::default();
        r.read_global_defs(&mut c).unwrap();
        assert_eq!(c.clock, Some((1_000_000_000, 1_000, 1_000)));
        assert_eq!(c.strings[1], (1, "main".to_string()));
        let locs = c.locations.clone();
        let read = r.read_events(&locs, &mut c).unwrap();
        assert!(read.local_def_errors.is_empty());
        assert_eq!(
            c.events,
            vec![
                "enter 0 1000 0 []",
                "enter 1 1500 0 [(0, I64(-7))]",
                "leave 1 1600 0",
                "leave 0 2000 0"
            ]
        );
    }

    struct Failing;
    impl EventHandler for Failing {
        fn leave(&mut self, _: u64, _: u64, _: Attrs, _: u32) -> Result<()> {
            Err(Otf2Error::other("stop here"))
        }
    }
    struct Panicking;
    impl EventHandler for Panicking {
        fn enter(&mut self, _: u64, _: u64, _: Attrs, _: u32) -> Result<()> {
            panic!("boom")
        }
    }

    #[test]
    fn handler_errors_and_panics_stop_the_read_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        write_tiny(dir.path()).unwrap();
        let anchor = dir.path().join("traces.otf2");
        let mut r = Reader::open(&anchor).unwrap();
        let e = r.read_events(&[0, 1], &mut Failing).unwrap_err();
        assert!(e.to_string().contains("stop here"), "{e}");
        let mut r = Reader::open(&anchor).unwrap();
        let e = r.read_events(&[0, 1], &mut Panicking).unwrap_err();
        assert!(e.to_string().contains("boom"), "{e}");
    }

    #[test]
    fn a_missing_archive_is_an_error() {
        let e = Reader::open(Path::new("/nonexistent/x.otf2"))
            .and_then(|mut r| r.read_global_defs(&mut Collect::default()));
        assert!(e.is_err());
    }
}
