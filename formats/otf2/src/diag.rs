//! Diagnostics of the OTF2 importer and exporter. Listed in `docs/formats/otf2.md`.

tracex_ir::kinds! {
    EXPORT_UNTIMED_SAMPLE = "otf2_untimed_sample_dropped", Warning,
        "a stack sample without a time (folded-stack input) cannot be placed on an OTF2 timeline; it was not written";
    EXPORT_NUL_REPLACED = "otf2_nul_in_string", Warning,
        "a name contained a NUL byte, which OTF2 strings cannot hold; it was replaced by U+FFFD (argument values with NUL bytes are kept exactly, JSON-escaped)";
    EXPORT_OPEN_SLICE = "otf2_open_slice_closed_at_end", Info,
        "a slice that never ended got its Leave at the end of the trace (marked tracex:open, so tracex reads it back as open)";
    EXPORT_FLOW_NOT_DRAWN = "otf2_flow_arrow_not_drawn", Warning,
        "a flow hop was written as a message to its own location because its next point did not arrive within the exporter's buffer; the flow is kept in attributes, but Vampir draws no line for it";
    IMPORT_ENTER_WITHOUT_LEAVE = "otf2_enter_without_leave", Warning,
        "a region was entered and never left; it was kept as an open slice";
    IMPORT_LEAVE_MISMATCH = "otf2_leave_mismatch", Warning,
        "a Leave named another region than the innermost open one; the regions entered after the one it names were closed at the same time";
    IMPORT_LEAVE_WITHOUT_ENTER = "otf2_leave_without_enter", Warning,
        "a Leave had no matching Enter on its location; it was dropped";
    IMPORT_TIME_BACKWARDS = "otf2_time_backwards", Warning,
        "a location's timestamps went backwards; the slice ending before it began got duration 0";
    IMPORT_UNMAPPED_EVENT = "otf2_event_not_mapped", Warning,
        "an OTF2 event kind tracex has no equivalent for (tasks, locks, thread teams, RMA synchronisation, I/O handle management, ...) was skipped; the detail names the first kind";
    IMPORT_UNDEFINED_REF = "otf2_undefined_reference", Error,
        "an event refers to a region, metric or other definition the archive does not define; it was skipped";
    IMPORT_METRIC_U64_AS_FLOAT = "otf2_metric_u64_as_float", Warning,
        "an unsigned 64-bit metric value above the largest signed 64-bit integer was kept as a float (the IR counter value is i64 or f64)";
    IMPORT_UNMATCHED_MESSAGE = "otf2_unmatched_message", Warning,
        "an MPI send, receive or RMA operation had no partner; no flow was made for it";
    IMPORT_PARAMETER_OUTSIDE_REGION = "otf2_parameter_outside_region", Info,
        "a parameter event happened while no region was open on its location; it was kept as an instant named after the parameter";
    IMPORT_RECORD_OUTSIDE_REGION = "otf2_record_outside_region", Info,
        "a message, collective or I/O record happened while no region was open on its location; its details were kept as an instant named after the record";
    IMPORT_LOCAL_DEFS_UNREADABLE = "otf2_local_defs_unreadable", Warning,
        "a location's local definitions (mapping tables, clock offsets) could not be read; its events were read without them";
    IMPORT_MISSING_CLOCK = "otf2_missing_clock_properties", Warning,
        "the archive has no ClockProperties definition; timestamps were read as nanoseconds";
}
