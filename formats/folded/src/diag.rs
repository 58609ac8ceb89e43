//! Diagnostics of the folded importer and exporter. Listed in `docs/formats/folded.md`.

tracex_ir::kinds! {
    BLANK_LINE = "folded_blank_line", Info,
        "a blank line was skipped";
    COMMENT_LINE = "folded_comment_line", Info,
        "a line starting with # (a header such as austin's `# mode: wall`) was skipped, as inferno does";
    NOT_TEXT = "folded_not_text", Error,
        "a line is not UTF-8 text (binary data); it was skipped";
    MISSING_COUNT = "folded_missing_count", Error,
        "a line does not end in a space and a count; it was skipped";
    NEGATIVE_COUNT = "folded_negative_count", Error,
        "a line ends in a negative count; it was skipped";
    BAD_COUNT = "folded_bad_count", Error,
        "a count does not fit a 64-bit integer; the line was skipped";
    FRACTIONAL_COUNT = "folded_fractional_count", Warning,
        "a count has a fractional part; it was truncated to an integer, as inferno does (scale the counts up to keep the precision)";
    EMPTY_STACK = "folded_empty_stack", Warning,
        "a line has a count but no stack (py-spy writes these); it was kept as a sample without a stack, which folded output cannot show (inferno ignores such lines)";
    ZERO_COUNT = "folded_zero_count", Info,
        "a line has the count 0; it was kept, but folded output never writes zero counts";
    DIFFERENTIAL = "folded_differential", Info,
        "a line has two counts (a differential file from difffolded.pl); the columns became two sample sets named folded:before and folded:after, written back as two columns";
    EXT_SHORT_LINE = "folded_ext_short_line", Error,
        "an extended folded line has fewer than six fields (timestamp_ns comm pid tid cpu stack); it was skipped";
    EXT_BAD_NUMBER = "folded_ext_bad_number", Error,
        "the timestamp, pid, tid or cpu of an extended folded line is not a number; the line was skipped";
    EXT_ANSI_STRIPPED = "folded_ext_ansi_stripped", Info,
        "terminal colour escapes were removed from an extended folded line";
    SAMPLE_WITHOUT_STACK = "folded_sample_without_stack", Warning,
        "a sample without a stack cannot be written as a folded line; its weight is not in the output";
    ZERO_WEIGHT = "folded_zero_weight", Info,
        "a stack's total weight was 0 (or below one unit of --weight); it was not written";
    FRAME_RENAMED = "folded_frame_renamed", Warning,
        "a frame name contained ';' or a line break, which would change the stack when read back; they were replaced by ':' and ' '";
    NOT_FOLDED = "folded_events_not_in_view", Info,
        "events that the chosen view (--fold) does not fold were left out: slices when folding samples, samples when folding timelines, CPU samples that were not caught at a launch in the GPU view";
    NON_THREAD_SLICES = "folded_non_thread_slices", Info,
        "slices on async, process or global tracks have no call nesting and are not part of a timeline flame graph";
    OPEN_SLICE = "folded_open_slice_closed", Warning,
        "a slice that never ended was closed at the end of the trace to compute self times";
    MIXED_DIFFERENTIAL = "folded_mixed_differential", Warning,
        "differential (two-count) and plain samples were mixed; plain lines were written with the second column's weights and the first column was dropped";
    GPU_LAUNCH_PENDING = "folded_gpu_launch_pending", Info,
        "a CPU stack caught at a kernel launch had no launch call within the tolerance in its process, or the launch had no GPU work; it ends in [GPU_Launch_Pending] (weight 0 with --weight gpu-ns, so not written then)";
    GPU_WORK_WITHOUT_STACK = "folded_gpu_work_without_stack", Warning,
        "GPU work whose launching call has no CPU stack (no backtrace, no matching uprobe sample) is not in the GPU flame graph; --summary gives its total time";
}
