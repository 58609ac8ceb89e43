//! Generates the Rust types of the Perfetto messages tracex reads and writes
//! (`proto/trackevent.proto`, tracex's own declaration of them) and of tracex's extension
//! (`proto/tracex.proto`) with prost. protox parses the `.proto` files, so no `protoc` needs to
//! be installed.

fn main() {
    let files = [
        "proto/trackevent.proto",
        "proto/android.proto",
        "proto/tracex.proto",
    ];
    for f in files {
        println!("cargo:rerun-if-changed={f}");
    }
    let fds = protox::compile(files, ["proto"]).expect("the .proto files of tracex-perfetto parse");
    // Large payloads boxed, so that a TracePacket stays small to build and move (one packet is
    // made per event).
    prost_build::Config::new()
        .boxed(".perfetto.protos.TracePacket.data.track_event")
        .boxed(".perfetto.protos.TracePacket.data.track_descriptor")
        .boxed(".perfetto.protos.TracePacket.data.stack_sample")
        .boxed(".perfetto.protos.TracePacket.data.ftrace_events")
        .boxed(".perfetto.protos.TracePacket.data.process_tree")
        .boxed(".perfetto.protos.TracePacket.data.gpu_counter_event")
        .boxed(".perfetto.protos.TracePacket.interned_data")
        .boxed(".perfetto.protos.TracePacket.trace_packet_defaults")
        .boxed(".perfetto.protos.TracePacket.tracex")
        .boxed(".perfetto.protos.TrackEvent.legacy_event")
        .compile_fds(fds)
        .expect("prost generates the Perfetto types");
}
