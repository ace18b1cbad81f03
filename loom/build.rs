//! Compiles this crate with `--cfg loom`: the logbus files it includes
//! leave out their own (std-thread) unit tests under it.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(loom)");
    println!("cargo:rustc-cfg=loom");
}
