//! Writing an archive: [`ArchiveWriter`] owns the `OTF2_Archive`, one [`EvtWriter`] per location
//! (opened on first use) and the [`GlobalDefWriter`].
//!
//! The sequence is the one libotf2 needs: flush callbacks and serial collective callbacks before
//! the event files are opened (the collective callbacks are what create the directories), event
//! writers closed with their event counts read first, empty local definition files, then the
//! global definitions and `OTF2_Archive_Close`, which writes the anchor file.

use std::ffi::{CStr, CString};
use std::os::raw::c_void;
use std::path::Path;
use std::ptr::NonNull;

use otf2_sys as sys;

use super::attrs::{AttrList, AttrValue};
use super::error::{check, check_write, init, null_handle, Otf2Error, Result};

/// Every buffer libotf2 asks about is flushed to disk (see the memory callbacks for when it
/// asks).
unsafe extern "C" fn pre_flush(
    _user: *mut c_void,
    _file_type: sys::OTF2_FileType,
    _location: sys::OTF2_LocationRef,
    _caller: *mut c_void,
    _final: bool,
) -> sys::OTF2_FlushType {
    sys::OTF2_FLUSH as sys::OTF2_FlushType
}

/// No post-flush callback: with one, libotf2 would insert BufferFlush records (with the
/// timestamp it returns) into the event streams.
static FLUSH_CALLBACKS: sys::OTF2_FlushCallbacks = sys::OTF2_FlushCallbacks {
    otf2_pre_flush: Some(pre_flush),
    otf2_post_flush: None,
};

/// The chunks tracex allocated for one libotf2 buffer (its `perBufferData`).
#[derive(Default)]
struct BufferChunks {
    chunks: Vec<(*mut u8, std::alloc::Layout)>,
}

/// Event chunks a location may hold before libotf2 writes them out. libotf2 flushes a buffer
/// only when allocating a new chunk fails; with plain malloc it never fails, and every event
/// of the trace would stay in memory until the archive is closed.
const EVENT_CHUNKS_PER_LOCATION: usize = 1;

/// Allocates a chunk, or refuses one (null) when an event buffer already has its share, which
/// makes libotf2 write the buffer to disk, free its chunks and ask again.
unsafe extern "C" fn allocate_chunk(
    _user: *mut c_void,
    file_type: sys::OTF2_FileType,
    _location: sys::OTF2_LocationRef,
    per_buffer: *mut *mut c_void,
    chunk_size: u64,
) -> *mut c_void {
    if per_buffer.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: libotf2 passes the same perBufferData slot for every call on one buffer; it is
    // null until this callback stores a boxed BufferChunks there, freed in free_chunks.
    let state = unsafe {
        if (*per_buffer).is_null() {
            *per_buffer = Box::into_raw(Box::<BufferChunks>::default()) as *mut c_void;
        }
        &mut *(*per_buffer as *mut BufferChunks)
    };
    if file_type == sys::OTF2_FILETYPE_EVENTS as sys::OTF2_FileType
        && state.chunks.len() >= EVENT_CHUNKS_PER_LOCATION
    {
        return std::ptr::null_mut();
    }
    let Ok(layout) = std::alloc::Layout::from_size_align(chunk_size.max(1) as usize, 64) else {
        return std::ptr::null_mut();
    };
    // SAFETY: a non-zero size; the pointer is kept and freed with the same layout.
    let p = unsafe { std::alloc::alloc(layout) };
    if !p.is_null() {
        state.chunks.push((p, layout));
    }
    p as *mut c_void
}

/// Frees every chunk of a buffer (after libotf2 wrote them), and the bookkeeping at the end.
unsafe extern "C" fn free_chunks(
    _user: *mut c_void,
    _file_type: sys::OTF2_FileType,
    _location: sys::OTF2_LocationRef,
    per_buffer: *mut *mut c_void,
    final_: bool,
) {
    // SAFETY: see allocate_chunk; each chunk was allocated there with its layout.
    unsafe {
        if per_buffer.is_null() || (*per_buffer).is_null() {
            return;
        }
        let state = &mut *(*per_buffer as *mut BufferChunks);
        for (p, layout) in state.chunks.drain(..) {
            std::alloc::dealloc(p, layout);
        }
        if final_ {
            drop(Box::from_raw(*per_buffer as *mut BufferChunks));
            *per_buffer = std::ptr::null_mut();
        }
    }
}

static MEMORY_CALLBACKS: sys::OTF2_MemoryCallbacks = sys::OTF2_MemoryCallbacks {
    otf2_allocate: Some(allocate_chunk),
    otf2_free_all: Some(free_chunks),
};

fn c_string(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Otf2Error::other(format!("{what}: text contains a NUL byte")))
}

/// The event writer of one location.
pub struct EvtWriter {
    raw: NonNull<sys::OTF2_EvtWriter>,
}

impl EvtWriter {
    fn ptr(&mut self) -> *mut sys::OTF2_EvtWriter {
        self.raw.as_ptr()
    }

    pub fn enter(
        &mut self,
        attrs: &mut AttrList,
        t: u64,
        region: sys::OTF2_RegionRef,
    ) -> Result<()> {
        let a = attrs.as_event_arg();
        // SAFETY: a live writer of this archive; `a` is NULL or a live list.
        let rc = unsafe { sys::OTF2_EvtWriter_Enter(self.ptr(), a, t, region) };
        done(rc, attrs, "OTF2_EvtWriter_Enter")
    }

    pub fn leave(
        &mut self,
        attrs: &mut AttrList,
        t: u64,
        region: sys::OTF2_RegionRef,
    ) -> Result<()> {
        let a = attrs.as_event_arg();
        // SAFETY: as in `enter`.
        let rc = unsafe { sys::OTF2_EvtWriter_Leave(self.ptr(), a, t, region) };
        done(rc, attrs, "OTF2_EvtWriter_Leave")
    }

    /// One metric event with one value per member of `metric`.
    pub fn metric(
        &mut self,
        attrs: &mut AttrList,
        t: u64,
        metric: sys::OTF2_MetricRef,
        types: &[sys::OTF2_Type],
        values: &[sys::OTF2_MetricValue],
    ) -> Result<()> {
        if types.len() != values.len() || types.len() > u8::MAX as usize {
            return Err(Otf2Error::other("OTF2_EvtWriter_Metric: bad value count"));
        }
        let a = attrs.as_event_arg();
        // SAFETY: both arrays hold `types.len()` elements.
        let rc = unsafe {
            sys::OTF2_EvtWriter_Metric(
                self.ptr(),
                a,
                t,
                metric,
                types.len() as u8,
                types.as_ptr(),
                values.as_ptr(),
            )
        };
        done(rc, attrs, "OTF2_EvtWriter_Metric")
    }

    #[allow(clippy::too_many_arguments)]
    pub fn mpi_send(
        &mut self,
        attrs: &mut AttrList,
        t: u64,
        receiver: u32,
        comm: sys::OTF2_CommRef,
        tag: u32,
        len: u64,
    ) -> Result<()> {
        let a = attrs.as_event_arg();
        // SAFETY: as in `enter`.
        let rc = unsafe { sys::OTF2_EvtWriter_MpiSend(self.ptr(), a, t, receiver, comm, tag, len) };
        done(rc, attrs, "OTF2_EvtWriter_MpiSend")
    }

    #[allow(clippy::too_many_arguments)]
    pub fn mpi_recv(
        &mut self,
        attrs: &mut AttrList,
        t: u64,
        sender: u32,
        comm: sys::OTF2_CommRef,
        tag: u32,
        len: u64,
    ) -> Result<()> {
        let a = attrs.as_event_arg();
        // SAFETY: as in `enter`.
        let rc = unsafe { sys::OTF2_EvtWriter_MpiRecv(self.ptr(), a, t, sender, comm, tag, len) };
        done(rc, attrs, "OTF2_EvtWriter_MpiRecv")
    }

    pub fn calling_context_sample(
        &mut self,
        attrs: &mut AttrList,
        t: u64,
        context: sys::OTF2_CallingContextRef,
        generator: sys::OTF2_InterruptGeneratorRef,
    ) -> Result<()> {
        let a = attrs.as_event_arg();
        // SAFETY: as in `enter`.
        let rc = unsafe {
            sys::OTF2_EvtWriter_CallingContextSample(self.ptr(), a, t, context, 0, generator)
        };
        done(rc, attrs, "OTF2_EvtWriter_CallingContextSample")
    }

    pub fn number_of_events(&mut self) -> Result<u64> {
        let mut n = 0;
        // SAFETY: live writer, plain out-parameter.
        check(
            unsafe { sys::OTF2_EvtWriter_GetNumberOfEvents(self.ptr(), &mut n) },
            "OTF2_EvtWriter_GetNumberOfEvents",
        )?;
        Ok(n)
    }
}

/// Checks a write; on failure empties the attribute list so it does not leak into the next event.
#[inline]
fn done(rc: sys::OTF2_ErrorCode, attrs: &mut AttrList, what: &str) -> Result<()> {
    let r = check_write(rc, what);
    if r.is_err() {
        attrs.clear();
    }
    r
}

/// What a property belongs to.
#[derive(Clone, Copy, Debug)]
pub enum PropertyOwner {
    Node(u32),
    Group(u32),
    Location(u64),
}

/// The writer of the global definitions (`<name>.def`).
pub struct GlobalDefWriter {
    raw: NonNull<sys::OTF2_GlobalDefWriter>,
}

macro_rules! def_call {
    ($self:ident, $f:ident ( $($arg:expr),* )) => {
        // SAFETY: a live global definition writer; arguments are plain values or pointers
        // valid for the duration of the call.
        check_write(unsafe { sys::$f($self.raw.as_ptr(), $($arg),*) }, stringify!($f))
    };
}

impl GlobalDefWriter {
    pub fn clock_properties(
        &mut self,
        resolution: u64,
        offset: u64,
        length: u64,
        realtime: u64,
    ) -> Result<()> {
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteClockProperties(resolution, offset, length, realtime)
        )
    }

    pub fn string(&mut self, r: sys::OTF2_StringRef, s: &CStr) -> Result<()> {
        def_call!(self, OTF2_GlobalDefWriter_WriteString(r, s.as_ptr()))
    }

    pub fn paradigm(&mut self, paradigm: u32, name: sys::OTF2_StringRef, class: u32) -> Result<()> {
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteParadigm(paradigm as u8, name, class as u8)
        )
    }

    pub fn system_tree_node(
        &mut self,
        r: sys::OTF2_SystemTreeNodeRef,
        name: sys::OTF2_StringRef,
        class: sys::OTF2_StringRef,
        parent: sys::OTF2_SystemTreeNodeRef,
    ) -> Result<()> {
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteSystemTreeNode(r, name, class, parent)
        )
    }

    pub fn system_tree_node_domain(
        &mut self,
        r: sys::OTF2_SystemTreeNodeRef,
        domain: u32,
    ) -> Result<()> {
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteSystemTreeNodeDomain(r, domain as u8)
        )
    }

    pub fn location_group(
        &mut self,
        r: sys::OTF2_LocationGroupRef,
        name: sys::OTF2_StringRef,
        ty: u32,
        parent: sys::OTF2_SystemTreeNodeRef,
    ) -> Result<()> {
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteLocationGroup(
                r,
                name,
                ty as u8,
                parent,
                sys::OTF2_UNDEFINED_LOCATION_GROUP
            )
        )
    }

    pub fn location(
        &mut self,
        r: sys::OTF2_LocationRef,
        name: sys::OTF2_StringRef,
        ty: u32,
        events: u64,
        group: sys::OTF2_LocationGroupRef,
    ) -> Result<()> {
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteLocation(r, name, ty as u8, events, group)
        )
    }

    /// A property (name, typed value) of a system tree node, location group or location.
    pub fn property(
        &mut self,
        owner: PropertyOwner,
        name: sys::OTF2_StringRef,
        v: AttrValue,
    ) -> Result<()> {
        let (ty, raw) = v.to_raw();
        match owner {
            PropertyOwner::Node(r) => def_call!(
                self,
                OTF2_GlobalDefWriter_WriteSystemTreeNodeProperty(
                    sys::OTF2_SystemTreeNodeRef(r),
                    name,
                    ty,
                    raw
                )
            ),
            PropertyOwner::Group(r) => def_call!(
                self,
                OTF2_GlobalDefWriter_WriteLocationGroupProperty(
                    sys::OTF2_LocationGroupRef(r),
                    name,
                    ty,
                    raw
                )
            ),
            PropertyOwner::Location(r) => def_call!(
                self,
                OTF2_GlobalDefWriter_WriteLocationProperty(sys::OTF2_LocationRef(r), name, ty, raw)
            ),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn region(
        &mut self,
        r: sys::OTF2_RegionRef,
        name: sys::OTF2_StringRef,
        description: sys::OTF2_StringRef,
        role: u32,
        paradigm: u32,
    ) -> Result<()> {
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteRegion(
                r,
                name,
                name,
                description,
                role as u8,
                paradigm as u8,
                sys::OTF2_REGION_FLAG_NONE,
                sys::OTF2_UNDEFINED_STRING,
                0,
                0
            )
        )
    }

    pub fn group(
        &mut self,
        r: sys::OTF2_GroupRef,
        name: sys::OTF2_StringRef,
        ty: u32,
        paradigm: u32,
        members: &[u64],
    ) -> Result<()> {
        let n = u32::try_from(members.len()).map_err(|_| Otf2Error::other("group too large"))?;
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteGroup(
                r,
                name,
                ty as u8,
                paradigm as u8,
                sys::OTF2_GROUP_FLAG_NONE,
                n,
                members.as_ptr()
            )
        )
    }

    pub fn comm(
        &mut self,
        r: sys::OTF2_CommRef,
        name: sys::OTF2_StringRef,
        group: sys::OTF2_GroupRef,
    ) -> Result<()> {
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteComm(
                r,
                name,
                group,
                sys::OTF2_UNDEFINED_COMM,
                sys::OTF2_COMM_FLAG_NONE
            )
        )
    }

    pub fn attribute(
        &mut self,
        r: sys::OTF2_AttributeRef,
        name: sys::OTF2_StringRef,
        description: sys::OTF2_StringRef,
        ty: sys::OTF2_Type,
    ) -> Result<()> {
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteAttribute(r, name, description, ty)
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub fn metric_member(
        &mut self,
        r: sys::OTF2_MetricMemberRef,
        name: sys::OTF2_StringRef,
        description: sys::OTF2_StringRef,
        mode: u32,
        value_type: sys::OTF2_Type,
        unit: sys::OTF2_StringRef,
    ) -> Result<()> {
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteMetricMember(
                r,
                name,
                description,
                sys::OTF2_METRIC_TYPE_USER as u8,
                mode as u8,
                value_type,
                sys::OTF2_BASE_DECIMAL as u8,
                0,
                unit
            )
        )
    }

    pub fn metric_class(
        &mut self,
        r: sys::OTF2_MetricRef,
        members: &[sys::OTF2_MetricMemberRef],
    ) -> Result<()> {
        let n =
            u8::try_from(members.len()).map_err(|_| Otf2Error::other("metric class too large"))?;
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteMetricClass(
                r,
                n,
                members.as_ptr(),
                sys::OTF2_METRIC_ASYNCHRONOUS as u8,
                sys::OTF2_RECORDER_KIND_ABSTRACT as u8
            )
        )
    }

    pub fn metric_class_recorder(
        &mut self,
        metric: sys::OTF2_MetricRef,
        recorder: sys::OTF2_LocationRef,
    ) -> Result<()> {
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteMetricClassRecorder(metric, recorder)
        )
    }

    pub fn calling_context(
        &mut self,
        r: sys::OTF2_CallingContextRef,
        region: sys::OTF2_RegionRef,
        parent: sys::OTF2_CallingContextRef,
    ) -> Result<()> {
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteCallingContext(
                r,
                region,
                sys::OTF2_UNDEFINED_SOURCE_CODE_LOCATION,
                parent
            )
        )
    }

    pub fn interrupt_generator(
        &mut self,
        r: sys::OTF2_InterruptGeneratorRef,
        name: sys::OTF2_StringRef,
    ) -> Result<()> {
        def_call!(
            self,
            OTF2_GlobalDefWriter_WriteInterruptGenerator(
                r,
                name,
                sys::OTF2_INTERRUPT_GENERATOR_MODE_TIME as u8,
                sys::OTF2_BASE_DECIMAL as u8,
                0,
                0
            )
        )
    }
}

/// An archive being written. Dropping it without [`ArchiveWriter::close`] closes libotf2's
/// handle but leaves an incomplete archive: the caller writes into a temporary directory.
pub struct ArchiveWriter {
    raw: NonNull<sys::OTF2_Archive>,
    writers: Vec<Option<EvtWriter>>,
    events: Vec<u64>,
    global: Option<GlobalDefWriter>,
    evt_files_open: bool,
    /// `OTF2_Archive_Close` was called: the handle is gone.
    closed: bool,
}

impl ArchiveWriter {
    /// Creates `<dir>/<name>.otf2`, `<dir>/<name>.def` and `<dir>/<name>/`.
    pub fn create(
        dir: &Path,
        name: &str,
        chunk_events: u64,
        chunk_defs: u64,
    ) -> Result<ArchiveWriter> {
        init();
        let cdir = c_string(&dir.to_string_lossy(), "archive path")?;
        let cname = c_string(name, "archive name")?;
        // SAFETY: valid C strings; the chunk sizes are checked by libotf2.
        let raw = unsafe {
            sys::OTF2_Archive_Open(
                cdir.as_ptr(),
                cname.as_ptr(),
                sys::OTF2_FILEMODE_WRITE as u8,
                chunk_events,
                chunk_defs,
                sys::OTF2_SUBSTRATE_POSIX as u8,
                sys::OTF2_COMPRESSION_NONE as u8,
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| null_handle("OTF2_Archive_Open"))?;
        let mut a = ArchiveWriter {
            raw,
            writers: Vec::new(),
            events: Vec::new(),
            global: None,
            evt_files_open: false,
            closed: false,
        };
        // SAFETY: the callbacks struct is 'static and the archive is live.
        check(
            unsafe {
                sys::OTF2_Archive_SetFlushCallbacks(a.ptr(), &FLUSH_CALLBACKS, std::ptr::null_mut())
            },
            "OTF2_Archive_SetFlushCallbacks",
        )?;
        // SAFETY: the callbacks struct is 'static and the archive is live.
        check(
            unsafe {
                sys::OTF2_Archive_SetMemoryCallbacks(
                    a.ptr(),
                    &MEMORY_CALLBACKS,
                    std::ptr::null_mut(),
                )
            },
            "OTF2_Archive_SetMemoryCallbacks",
        )?;
        // SAFETY: live archive.
        check(
            unsafe { sys::OTF2_Archive_SetSerialCollectiveCallbacks(a.ptr()) },
            "OTF2_Archive_SetSerialCollectiveCallbacks",
        )?;
        // SAFETY: live archive.
        check(
            unsafe { sys::OTF2_Archive_OpenEvtFiles(a.ptr()) },
            "OTF2_Archive_OpenEvtFiles",
        )?;
        a.evt_files_open = true;
        Ok(a)
    }

    fn ptr(&self) -> *mut sys::OTF2_Archive {
        self.raw.as_ptr()
    }

    pub fn set_creator(&mut self, creator: &str) -> Result<()> {
        let c = c_string(creator, "creator")?;
        // SAFETY: live archive, valid C string copied by libotf2.
        check(
            unsafe { sys::OTF2_Archive_SetCreator(self.ptr(), c.as_ptr()) },
            "OTF2_Archive_SetCreator",
        )
    }

    pub fn set_description(&mut self, text: &str) -> Result<()> {
        let c = c_string(text, "description")?;
        // SAFETY: as in `set_creator`.
        check(
            unsafe { sys::OTF2_Archive_SetDescription(self.ptr(), c.as_ptr()) },
            "OTF2_Archive_SetDescription",
        )
    }

    /// A trace file property (`NAMESPACE::NAME`, letters, digits and `_`).
    pub fn set_property(&mut self, name: &str, value: &str) -> Result<()> {
        let n = c_string(name, "property name")?;
        let v = c_string(value, "property value")?;
        // SAFETY: as in `set_creator`.
        check(
            unsafe { sys::OTF2_Archive_SetProperty(self.ptr(), n.as_ptr(), v.as_ptr(), true) },
            "OTF2_Archive_SetProperty",
        )
    }

    /// The event writer of location `loc` (dense refs from 0), opened on first use.
    pub fn evt_writer(&mut self, loc: u64) -> Result<&mut EvtWriter> {
        let i = loc as usize;
        if i >= self.writers.len() {
            self.writers.resize_with(i + 1, || None);
        }
        if self.writers[i].is_none() {
            // SAFETY: live archive with open event files.
            let raw =
                unsafe { sys::OTF2_Archive_GetEvtWriter(self.ptr(), sys::OTF2_LocationRef(loc)) };
            let raw = NonNull::new(raw).ok_or_else(|| null_handle("OTF2_Archive_GetEvtWriter"))?;
            self.writers[i] = Some(EvtWriter { raw });
        }
        Ok(self.writers[i].as_mut().expect("opened above"))
    }

    /// The global definition writer. Strings may be written to it while events are still being
    /// written; libotf2 flushes its chunks like event chunks.
    pub fn global_defs(&mut self) -> Result<&mut GlobalDefWriter> {
        if self.global.is_none() {
            // SAFETY: live archive.
            let raw = unsafe { sys::OTF2_Archive_GetGlobalDefWriter(self.ptr()) };
            let raw =
                NonNull::new(raw).ok_or_else(|| null_handle("OTF2_Archive_GetGlobalDefWriter"))?;
            self.global = Some(GlobalDefWriter { raw });
        }
        Ok(self.global.as_mut().expect("opened above"))
    }

    /// Closes every event writer and the event files, then writes an empty local definition
    /// file per location. Returns the number of events each location received (by ref).
    pub fn close_events(&mut self, locations: u64) -> Result<&[u64]> {
        self.events = vec![0; locations as usize];
        for (i, w) in self.writers.iter_mut().enumerate() {
            if let Some(mut w) = w.take() {
                if i < self.events.len() {
                    self.events[i] = w.number_of_events()?;
                }
                // SAFETY: the writer belongs to this archive and is closed once.
                check_write(
                    unsafe { sys::OTF2_Archive_CloseEvtWriter(self.raw.as_ptr(), w.ptr()) },
                    "OTF2_Archive_CloseEvtWriter",
                )?;
            }
        }
        if self.evt_files_open {
            // SAFETY: live archive.
            check_write(
                unsafe { sys::OTF2_Archive_CloseEvtFiles(self.ptr()) },
                "OTF2_Archive_CloseEvtFiles",
            )?;
            self.evt_files_open = false;
        }
        // SAFETY: live archive.
        check_write(
            unsafe { sys::OTF2_Archive_OpenDefFiles(self.ptr()) },
            "OTF2_Archive_OpenDefFiles",
        )?;
        for loc in 0..locations {
            // SAFETY: live archive with open definition files.
            let dw =
                unsafe { sys::OTF2_Archive_GetDefWriter(self.ptr(), sys::OTF2_LocationRef(loc)) };
            if dw.is_null() {
                return Err(null_handle("OTF2_Archive_GetDefWriter"));
            }
            // SAFETY: the writer was just opened on this archive.
            check_write(
                unsafe { sys::OTF2_Archive_CloseDefWriter(self.ptr(), dw) },
                "OTF2_Archive_CloseDefWriter",
            )?;
        }
        // SAFETY: live archive.
        check_write(
            unsafe { sys::OTF2_Archive_CloseDefFiles(self.ptr()) },
            "OTF2_Archive_CloseDefFiles",
        )?;
        Ok(&self.events)
    }

    /// Writes the anchor file and the global definitions and releases the archive (and this
    /// writer's own memory: everything but the handle is dropped normally).
    pub fn close(mut self) -> Result<()> {
        self.closed = true;
        // SAFETY: the archive is live and closed exactly once (Drop skips a closed archive).
        check_write(
            unsafe { sys::OTF2_Archive_Close(self.ptr()) },
            "OTF2_Archive_Close",
        )
    }
}

impl Drop for ArchiveWriter {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        // SAFETY: releases the handle once; errors do not matter for an abandoned archive.
        let _ = unsafe { sys::OTF2_Archive_Close(self.ptr()) };
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes a two-location archive by hand; the reader tests read it back.
    pub(crate) fn write_tiny(dir: &Path) -> Result<()> {
        let mut a = ArchiveWriter::create(dir, "traces", 1 << 20, 1 << 20)?;
        a.set_creator("tracex test")?;
        let mut attrs = AttrList::new()?;
        let region = sys::OTF2_RegionRef(0);
        {
            let w = a.evt_writer(0)?;
            w.enter(&mut attrs, 1_000, region)?;
            w.leave(&mut attrs, 2_000, region)?;
        }
        {
            let w = a.evt_writer(1)?;
            attrs.add(sys::OTF2_AttributeRef(0), AttrValue::I64(-7))?;
            w.enter(&mut attrs, 1_500, region)?;
            w.leave(&mut attrs, 1_600, region)?;
        }
        // a timestamp going backwards is an error, not a silently dropped event
        let err = a
            .evt_writer(1)?
            .enter(&mut attrs, 1_000, region)
            .unwrap_err();
        assert!(err.to_string().contains("OTF2_EvtWriter_Enter"), "{err}");
        let counts = a.close_events(2)?.to_vec();
        assert_eq!(counts, vec![2, 2]);
        let g = a.global_defs()?;
        g.clock_properties(1_000_000_000, 1_000, 1_000, sys::OTF2_UNDEFINED_TIMESTAMP)?;
        for (i, s) in ["", "main", "node", "proc", "thread", "x"]
            .iter()
            .enumerate()
        {
            g.string(sys::OTF2_StringRef(i as u32), &CString::new(*s).unwrap())?;
        }
        let s = sys::OTF2_StringRef;
        g.system_tree_node(
            sys::OTF2_SystemTreeNodeRef(0),
            s(2),
            s(2),
            sys::OTF2_UNDEFINED_SYSTEM_TREE_NODE,
        )?;
        g.location_group(
            sys::OTF2_LocationGroupRef(0),
            s(3),
            sys::OTF2_LOCATION_GROUP_TYPE_PROCESS,
            sys::OTF2_SystemTreeNodeRef(0),
        )?;
        for l in 0..2 {
            g.location(
                sys::OTF2_LocationRef(l),
                s(4),
                sys::OTF2_LOCATION_TYPE_CPU_THREAD,
                counts[l as usize],
                sys::OTF2_LocationGroupRef(0),
            )?;
        }
        g.region(
            region,
            s(1),
            s(0),
            sys::OTF2_REGION_ROLE_FUNCTION,
            sys::OTF2_PARADIGM_USER,
        )?;
        g.attribute(
            sys::OTF2_AttributeRef(0),
            s(5),
            s(0),
            sys::OTF2_TYPE_INT64 as u8,
        )?;
        a.close()
    }

    #[test]
    fn writes_an_archive() {
        let dir = tempfile::tempdir().unwrap();
        write_tiny(dir.path()).unwrap();
        for f in [
            "traces.otf2",
            "traces.def",
            "traces/0.evt",
            "traces/1.evt",
            "traces/0.def",
        ] {
            assert!(dir.path().join(f).is_file(), "{f} missing");
        }
    }
}
