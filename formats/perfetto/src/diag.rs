//! Diagnostics of the Perfetto importer and exporter. Listed in `docs/formats/perfetto.md`.

tracex_ir::kinds! {
    EXPORT_FLOW_NOT_DRAWN = "perfetto_flow_not_drawn", Warning,
        "a flow point had no slice to attach to (no enclosing slice, or no later slice on its track); Perfetto draws no arrow for it, tracex keeps it in its extension";
    EXPORT_SAMPLE_WITHOUT_THREAD = "perfetto_sample_without_thread", Warning,
        "a stack sample was not on a thread of a process (Perfetto attributes samples to threads); it was not written";
    EXPORT_UNTIMED_SAMPLE = "perfetto_untimed_sample", Info,
        "a stack sample without a time (folded stacks) was written at time 0 and marked, so tracex reads it back untimed; Perfetto's flame graph counts it with its weight";
    EXPORT_TIME_BEFORE_START = "perfetto_time_before_start", Error,
        "an event came earlier than the first event (the input was not in time order); it was written at the trace start";

    IMPORT_UNMAPPED = "perfetto_packet_unmapped", Warning,
        "packets of kinds tracex does not map (process and system stats, Android's frame timeline, logs, other profilers, ...) were skipped; the detail counts each kind";
    IMPORT_BOOKKEEPING = "perfetto_packet_bookkeeping", Info,
        "packets about the recording itself (trace config and stats, service events, system info, uuids) were skipped; the detail counts each kind";
    IMPORT_TYPED_ARGS = "perfetto_typed_args_dropped", Warning,
        "track events carried typed arguments of Chrome's schema that tracex does not decode; the event was kept without them (the detail counts each field)";
    IMPORT_PROTO_ARG = "perfetto_proto_arg_dropped", Warning,
        "a debug annotation held an embedded proto message, which cannot be decoded without its schema; the argument was dropped";
    IMPORT_MISSING_IID = "perfetto_missing_interned_id", Warning,
        "an event referred to interned data (a name, category, string, callstack) never defined on its sequence; shown as unknown(N)";
    IMPORT_INVALID_STATE = "perfetto_packet_skipped_invalid_state", Warning,
        "packets that depend on interned data came before the sequence's first incremental-state reset, or after packets were lost; they were skipped, as trace processor does";
    IMPORT_DATA_LOSS = "perfetto_previous_packets_dropped", Warning,
        "the tracing service recorded lost packets on a sequence (ring buffer overwritten, or a writer's chunk missing)";
    IMPORT_UNKNOWN_TRACK = "perfetto_unknown_track", Warning,
        "events referred to a track uuid that no descriptor in the trace describes; they were kept on an async track named after the uuid";
    IMPORT_TRACK_LINK = "perfetto_track_link_broken", Warning,
        "a track descriptor's parent (or the track it is an overflow lane of) closes a cycle of descriptors or chains more than 64 deep; that link was ignored (the track kept without its parent)";
    IMPORT_UNKNOWN_CLOCK = "perfetto_unknown_clock", Error,
        "a timestamp was on a clock that no clock snapshot relates to the trace clock; the packet was skipped";
    IMPORT_BAD_TIMESTAMP = "perfetto_bad_timestamp", Error,
        "a timestamp does not fit a signed 64-bit nanosecond time (an unsigned underflow such as 2^64 - 5000); the packet was skipped";
    IMPORT_MISSING_TIMESTAMP = "perfetto_missing_timestamp", Error,
        "a track event had no timestamp; it was skipped";
    IMPORT_UNMATCHED_END = "perfetto_unmatched_end", Warning,
        "a slice end had no open slice on its track; it was dropped";
    IMPORT_COUNTER_WITHOUT_VALUE = "perfetto_counter_without_value", Warning,
        "a counter event had no value, or was not on a counter track; it was dropped";
    IMPORT_UNMAPPED_EVENT = "perfetto_event_unmapped", Warning,
        "a track event of a type or legacy phase tracex does not map (state events, legacy counters or object events) was dropped; the detail names them";
    IMPORT_FLOW_UNPAIRED = "perfetto_flow_unpaired", Warning,
        "flow points had no partner (a flow begun and never continued, a step or end of a flow never begun); they were dropped, as trace processor draws no arrow for them";
    IMPORT_THREAD_TIME_DROPPED = "perfetto_thread_time_dropped", Info,
        "a thread-time reading on an instant or counter event was dropped (the IR keeps thread time only on slices)";
    IMPORT_ZSTD = "perfetto_zstd_packets", Error,
        "the trace holds zstd-compressed packets, which tracex cannot read; they were skipped";
    IMPORT_TORN = "perfetto_truncated", Warning,
        "the trace ends in the middle of a packet (a recording cut short); that packet was dropped";
    IMPORT_BAD_PACKET = "perfetto_bad_packet", Error,
        "a packet does not decode as a TracePacket; it was skipped";
    IMPORT_TRACE_FIELD = "perfetto_trace_field_skipped", Warning,
        "the trace holds a top-level field other than packets; it was skipped";
    IMPORT_FTRACE_UNMAPPED = "perfetto_ftrace_unmapped", Warning,
        "ftrace events of kinds tracex does not map (scheduling, CPU frequency and idle, interrupts, ...) were skipped; atrace markers (print events) are read; the detail counts each kind";
    IMPORT_ATRACE_UNPARSED = "perfetto_atrace_unparsed", Warning,
        "an ftrace print event is not an atrace marker tracex can read (B, E, S, F, I, N, C, G, H with their fields); it was skipped";
    IMPORT_GPU_FIRST_READING = "perfetto_gpu_counter_first_reading", Info,
        "the first reading of a GPU counter whose values look backwards covers the time before its first sample; as in Perfetto, it is not placed (each later value is placed at the previous sample's time, and the last sample reads 0)";
    IMPORT_GPU_UNDESCRIBED = "perfetto_gpu_counter_undescribed", Warning,
        "a GPU counter sample names a counter id no descriptor defined; it was dropped";
    IMPORT_SAMPLE_WITHOUT_THREAD = "perfetto_sample_thread_unknown", Warning,
        "a stack sample named no thread (and no sequence thread applies); it was dropped";
}
