//! Diagnostics of the Chrome importer and exporter. Listed in `docs/formats/chrome.md`.

tracex_ir::kinds! {
    UNTERMINATED = "chrome_unterminated", Info,
        "the events array or the top-level object was never closed (a trace from a crashed or still running process); everything before the end was read";
    TORN_EVENT = "chrome_torn_event", Warning,
        "the input ends in the middle of an event or value; that last piece was dropped";
    TRAILING_DATA = "chrome_trailing_data", Warning,
        "bytes follow the end of the JSON document; they were ignored";
    STRAY_COMMA = "chrome_stray_comma", Info,
        "a comma with no event before it (leading, doubled or trailing comma) was skipped";
    EMPTY_EVENT = "chrome_empty_event", Info,
        "an empty {} event (padding some producers write) was skipped";
    MISSING_PHASE = "chrome_missing_phase", Error,
        "an event has fields but no \"ph\"; it was skipped";
    NOT_AN_OBJECT = "chrome_event_not_object", Error,
        "an element of the events array is not an object; it was skipped";
    UNKNOWN_FIELD = "chrome_unknown_field", Warning,
        "an event carries a field the trace event format does not define; the field was dropped (the event was kept)";
    MISSING_TS = "chrome_missing_ts", Error,
        "an event other than metadata has no \"ts\"; it was skipped";
    BAD_TS = "chrome_bad_ts", Error,
        "a \"ts\", \"dur\", \"tts\" or \"tdur\" is not a number (or numeric string) in range; the event was skipped (or the field dropped when optional)";
    SUB_NS_ROUNDED = "chrome_sub_ns_rounded", Info,
        "a time had digits below one nanosecond; it was rounded to the nearest nanosecond";
    UNMATCHED_END = "chrome_unmatched_end", Warning,
        "an \"E\" event had no open \"B\" on its thread; it was dropped";
    COMPLETE_WITHOUT_DUR = "chrome_complete_without_dur", Warning,
        "an \"X\" event has no \"dur\"; it was kept with duration 0";
    UNMATCHED_ASYNC_END = "chrome_unmatched_async_end", Warning,
        "an async, object or context end (e, F, D, \")\") had no open begin with its id; it was dropped";
    FLOW_END_WITHOUT_START = "chrome_flow_end_without_start", Warning,
        "a flow end or step (f, t, flow_in) had no open start with its id; it was dropped (producers such as Kineto write many)";
    FLOW_START_WITHOUT_END = "chrome_flow_start_without_end", Warning,
        "a flow start (s, flow_out) was never followed by a step or end with its id; it was dropped";
    FLOW_WITHOUT_DIRECTION = "chrome_flow_without_direction", Warning,
        "an event has \"bind_id\" but neither \"flow_in\" nor \"flow_out\"; the binding was dropped";
    COUNTER_NOT_NUMERIC = "chrome_counter_not_numeric", Warning,
        "a counter series value is not a number or numeric string; that value was dropped";
    END_STACK_DROPPED = "chrome_end_stack_dropped", Warning,
        "an end stack (esf/estack) was given; the IR keeps only the stack at the start of a slice";
    MEMORY_DUMP_AS_INSTANT = "chrome_memory_dump_as_instant", Info,
        "a memory dump (V/v) was kept as an instant with its dump in args; it is written back as an instant";
    CLOCK_SYNC_AS_INSTANT = "chrome_clock_sync_as_instant", Info,
        "a clock sync marker (c) was kept as a global instant named clock_sync; it is written back as an instant";
    LINKED_IDS_DROPPED = "chrome_linked_ids_dropped", Warning,
        "a linked-id event (=) was dropped: the IR has no notion of id aliases";
    UNKNOWN_PHASE = "chrome_unknown_phase", Warning,
        "an event has a phase the format does not define; it was dropped";
    METADATA_TS_IGNORED = "chrome_metadata_ts_ignored", Info,
        "a metadata (M) event carries a \"ts\"; metadata has no time in the IR";
    SAMPLE_WEIGHT_ROUNDED = "chrome_sample_weight_rounded", Warning,
        "a sample weight was not an integer; it was rounded to the nearest integer";
    BAD_STACK_FRAME = "chrome_bad_stack_frame", Warning,
        "a stack frame reference (sf, parent) names no entry of stackFrames, or an entry is malformed; it is shown as \"?\"";
    BAD_SAMPLE = "chrome_bad_sample", Warning,
        "an entry of the top-level samples array lacks a usable ts or thread; it was dropped";
    V8_PROFILE_UNPARSED = "chrome_v8_profile_unparsed", Warning,
        "a V8 Profile/ProfileChunk sample event could not be decoded; it was dropped";
    ARGS_NOT_OBJECT = "chrome_args_not_object", Warning,
        "\"args\" is not an object; its value was kept under the key \"args\"";
    BAD_ID = "chrome_bad_id", Warning,
        "a pid, tid or id is neither a number nor a string; its JSON text is used as a string id";
    METADATA_WITHOUT_ARGS = "chrome_metadata_without_args", Warning,
        "a metadata event has no usable args (no name or sort_index); it was dropped";
    ROCPROF_EXACT_NS = "chrome_rocprof_exact_ns", Info,
        "a complete event carried rocprof's args.BeginNs/EndNs; its time and duration were taken from them to the nanosecond (ts and dur hold whole microseconds)";
    EXPORT_UNTIMED_SAMPLE = "chrome_export_untimed_sample", Warning,
        "a sample without a time (from folded stacks) was written with ts 0: Chrome samples need a time";
    EXPORT_NON_FINITE = "chrome_export_non_finite", Warning,
        "a NaN or infinite number cannot be written in JSON; it was written as null";
    EXPORT_FLOW_OFF_THREAD = "chrome_export_flow_off_thread", Warning,
        "a flow point on an async or process track was written on its process's main thread (tid = pid): viewers bind flow events (s/t/f) only to a thread's slices, so catapult and Perfetto bind it to the slice of that thread at its time, if any, not to the async slice";
}
