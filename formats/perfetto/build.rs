//! Generates the Rust types of the Perfetto schema subset (`proto/perfetto_trace.proto`) and of
//! tracex's extension (`proto/tracex.proto`) with prost. protox parses the `.proto` files, so no
//! `protoc` needs to be installed.

fn main() {
    let files = ["proto/perfetto_trace.proto", "proto/tracex.proto"];
    for f in files {
        println!("cargo:rerun-if-changed={f}");
    }
    let fds = protox::compile(files, ["proto"]).expect("the .proto files of tracex-perfetto parse");
    prost_build::Config::new()
        .compile_fds(fds)
        .expect("prost generates the Perfetto types");
}
