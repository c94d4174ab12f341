//! Generates the gRPC code and the descriptor set that server reflection serves.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "proto/yamor/v1/common.proto",
        "proto/yamor/v1/host.proto",
        "proto/yamor/v1/organizer.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    // The vendored protoc means no system install is needed.
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .file_descriptor_set_path(out.join("yamor_descriptor.bin"))
        .compile_with_config(config, &protos, &["proto"])?;
    Ok(())
}
