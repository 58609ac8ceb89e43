//! Diagnostics of the CUPTI importer. Listed in `docs/formats/cupti.md`.

tracex_ir::kinds! {
    LOG_LINE = "cupti_log_line", Info,
        "a line of the injection library's log (`Calling CUPTI API: ...`, `Enabling CUPTI_ACTIVITY_KIND_...`) between the records was skipped";
    BLANK_LINE = "cupti_blank_line", Info,
        "a blank line was skipped";
    NOT_TEXT = "cupti_not_text", Error,
        "a line is not UTF-8 text (binary data); it was skipped";
    BAD_RECORD = "cupti_bad_record", Error,
        "an activity record could not be read (a missing bracket, a time or id that is not a number, no name); it was skipped";
    UNKNOWN_RECORD = "cupti_unknown_record", Warning,
        "an activity record of a kind tracex does not map (MARKER, NAME, SYNCHRONIZATION, ...) was skipped";
    ORPHAN_CONTINUATION = "cupti_orphan_continuation", Warning,
        "an indented continuation line (grid/device details) follows no record; it was skipped";
    NO_DEVICE = "cupti_no_device", Warning,
        "a kernel or copy record has no deviceId/streamId line; it was put on device 0, on the stream track named `unknown stream`";
    JSON_NO_STREAM = "cupti_json_kernel_without_stream", Info,
        "CUPTI Chrome JSON kernels and copies carry no device or stream (cupti_trace_parser.py never adds them); they are on device 0's `unknown stream` track";
    GPU_WITHOUT_CALL = "cupti_gpu_without_call", Warning,
        "a kernel or copy has a correlation id that no runtime or driver call has; it is kept without a flow";
    GPU_BEFORE_CALL = "cupti_gpu_before_call", Warning,
        "a kernel or copy starts before the call with its correlation id; no flow was drawn (flows go forward in time)";
    DUPLICATE_CORRELATION = "cupti_duplicate_correlation", Warning,
        "two runtime or driver calls have the same correlation id; GPU work with that id is joined to the first";
}
