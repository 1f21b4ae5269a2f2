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
    static_cxx_runtime();

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

/// Links the C++ runtime (RocksDB's libstdc++) statically, so that `libkstate.so` needs no
/// `GLIBCXX_*`/`CXXABI_*` symbol versions from the machine it runs on: the newest libstdc++
/// of the build machine is otherwise required at run time (`GLIBCXX_3.4.30` on Debian 12),
/// which older distributions and most production base images lack.
///
/// `librocksdb-sys` asks for `-lstdc++`; gcc's `-static-libstdc++` would not change an
/// explicit `-l`, and changing the C++ library through `CXXSTDLIB` would rebuild RocksDB.
/// Instead a directory holding only the toolchain's `libstdc++.a` is put first on the
/// library search path, so the linker resolves `-lstdc++` to the archive. The cdylib's
/// version script keeps the archive's symbols local: the library still exports only
/// `kstate_*` and the JNI natives. libgcc_s stays dynamic (Rust's unwinder links it, and every
/// glibc system has it).
///
/// Skipped when the C++ compiler has no `libstdc++.a` (a zig, clang/libc++ or non-GNU
/// toolchain: zig links its own libc++ statically anyway), and when
/// `KSTATE_DYNAMIC_LIBSTDCXX=1` asks for the system's shared libstdc++ (a distribution
/// package that wants it).
fn static_cxx_runtime() {
    println!("cargo:rerun-if-env-changed=KSTATE_DYNAMIC_LIBSTDCXX");
    let target = std::env::var("TARGET").unwrap_or_default();
    if !target.contains("-linux-gnu")
        || std::env::var("KSTATE_DYNAMIC_LIBSTDCXX").as_deref() == Ok("1")
    {
        return;
    }
    // The C++ compiler the cc crate (and so librocksdb-sys) uses for this target.
    let target_var = format!("CXX_{}", target.replace(['-', '.'], "_"));
    for var in [target_var.as_str(), "CXX"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let cxx = std::env::var(&target_var)
        .or_else(|_| std::env::var("CXX"))
        .unwrap_or_else(|_| "c++".into());
    let archive = std::process::Command::new(&cxx)
        .arg("-print-file-name=libstdc++.a")
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    // A compiler that does not know the archive prints the bare name back.
    let Some(archive) = archive.filter(|a| a.is_absolute() && a.is_file()) else {
        // Expected with zig (cargo-zigbuild), which links its own libc++ statically.
        if !cxx.contains("zig") {
            println!("cargo:warning=no libstdc++.a from {cxx}: C++ runtime linked as it defaults");
        }
        return;
    };
    let Some(out_dir) = std::env::var_os("OUT_DIR") else {
        return;
    };
    let dir = std::path::PathBuf::from(out_dir).join("static-libstdcxx");
    let link = dir.join("libstdc++.a");
    let made = std::fs::create_dir_all(&dir)
        .and_then(|()| match std::fs::remove_file(&link) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        })
        .and_then(|()| std::os::unix::fs::symlink(&archive, &link));
    match made {
        Ok(()) => println!("cargo:rustc-link-search=native={}", dir.display()),
        Err(e) => println!(
            "cargo:warning=cannot stage {}: {e}; linking the shared libstdc++",
            archive.display()
        ),
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
