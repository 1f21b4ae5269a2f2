//! Regenerates `include/kstate.h` from `src/capi/` with cbindgen.
//!
//! The header is checked in; CI rebuilds and fails when the regenerated file differs from
//! the committed one. Only the C surface is parsed (not the whole crate), which keeps the
//! build fast and free of `cargo metadata` calls. The file is rewritten only when its
//! contents change, so an unchanged header keeps its timestamp (no needless C rebuilds).

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=src/capi");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build.rs");

    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    if let Err(e) = generate(&root) {
        // A broken header must not go unnoticed, but a missing cbindgen input is a bug in
        // the sources that the compiler reports better; fail loudly either way.
        panic!("generating include/kstate.h failed: {e}");
    }
}

fn generate(root: &Path) -> Result<(), String> {
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml"))
        .map_err(|e| format!("reading cbindgen.toml: {e}"))?;
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/capi/mod.rs"))
        .generate()
        .map_err(|e| format!("cbindgen: {e}"))?;
    let out = root.join("include/kstate.h");
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    // `write_to_file` only touches the file when the contents changed.
    bindings.write_to_file(&out);
    Ok(())
}
