//! Regenerates `include/kstate.h` from `src/capi/` with cbindgen.
//!
//! The header is checked in; CI rebuilds and fails when the regenerated file differs from
//! the committed one (`git diff --exit-code include/kstate.h`). Only the C surface is
//! parsed, not the whole crate, which keeps the build fast and free of `cargo metadata`
//! calls. The file is rewritten only when its contents change, so an unchanged header
//! keeps its timestamp and C code depending on it is not rebuilt needlessly.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=src/capi");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build.rs");
    // Also when the header itself was edited or deleted: it is restored from the sources.
    println!("cargo:rerun-if-changed=include/kstate.h");
    // C programs link against the ABI's major version (`libkstate.so.0`), so a later
    // incompatible release can be installed beside this one.
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libkstate.so.{major}");

    let root = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| std::path::PathBuf::from("."), std::path::PathBuf::from);
    let header = match generate(&root) {
        Ok(h) => h,
        // The C sources do not describe a valid header: a real bug, stop the build.
        Err(e) => panic!("generating include/kstate.h failed: {e}"),
    };
    let out = root.join("include/kstate.h");
    if std::fs::read(&out).ok().as_deref() == Some(header.as_slice()) {
        return;
    }
    // A read-only source tree (a vendored or packaged copy) keeps its checked-in header;
    // say so instead of failing the build.
    let written = out
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&out, &header));
    if let Err(e) = written {
        println!("cargo:warning=could not update {}: {e}", out.display());
    }
}

fn generate(root: &Path) -> Result<Vec<u8>, String> {
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml"))
        .map_err(|e| format!("reading cbindgen.toml: {e}"))?;
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/capi/mod.rs"))
        .generate()
        .map_err(|e| format!("cbindgen: {e}"))?;
    let mut header = Vec::new();
    bindings.write(&mut header);
    Ok(header)
}
