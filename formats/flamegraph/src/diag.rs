//! Diagnostics of the SVG flame graph. What the folded views cannot carry is counted by the
//! folded exporter (its `folded_*` diagnostics); rendering adds one kind.

tracex_ir::kinds! {
    FLAMEGRAPH_NARROW_FRAMES = "flamegraph_narrow_frames", Info,
        "stacks too small to be drawn (narrower than 0.1 pixel at the picture's width) were left out of the picture, as inferno and flamegraph.pl do; their weight still counts in the totals, and the folded output lists them";
}
