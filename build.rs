//! Regenerates `include/kstate.h` from `src/capi/` with cbindgen.
//!
//! The header is checked in; CI rebuilds and fails when the regenerated file differs from
//! the committed one (`git diff --exit-code include/kstate.h`). Only the C surface is
//! parsed, not the whole crate, which keeps the build fast and free of `cargo metadata`
//! calls. The file is rewritten only when its contents change, so an unchanged header
//! keeps its timestamp and C code depending on it is not rebuilt needlessly.

use std::path::Path;

#[path = "build/capi_fn.rs"]
mod capi_fn;

fn main() {
    println!("cargo:rerun-if-changed=src/capi");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build");
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
    let expanded = expand_templates(root)?;
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml"))
        .map_err(|e| format!("reading cbindgen.toml: {e}"))?;
    let mut builder = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/capi/mod.rs"));
    for file in &expanded {
        builder = builder.with_src(file);
    }
    let bindings = builder.generate().map_err(|e| format!("cbindgen: {e}"))?;
    let mut header = Vec::new();
    bindings.write(&mut header);
    Ok(header)
}

/// Expands every `src/capi/<name>.rs.in` into `$OUT_DIR/capi_<name>.rs` (which the module
/// `include!`s) and returns the expanded files, for cbindgen to read with the rest.
fn expand_templates(root: &Path) -> Result<Vec<std::path::PathBuf>, String> {
    let out_dir = std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?;
    let dir = root.join("src/capi");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut templates: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".rs.in"))
        .collect();
    // A stable order keeps the build reproducible (cbindgen sorts items by name anyway).
    templates.sort();
    let mut expanded = Vec::new();
    for template in templates {
        let name = template
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".rs.in"))
            .ok_or_else(|| format!("{}: not a template name", template.display()))?;
        let text = std::fs::read_to_string(&template)
            .map_err(|e| format!("reading {}: {e}", template.display()))?;
        let target = Path::new(&out_dir).join(format!("capi_{name}.rs"));
        let code = expand(&text)
            .and_then(|t| capi_fn::expand(&t))
            .map_err(|e| format!("{name}.rs.in:{e}"))?;
        std::fs::write(&target, code).map_err(|e| format!("writing {}: {e}", target.display()))?;
        expanded.push(target);
    }
    Ok(expanded)
}

/// Expands the C functions written once for several store kinds or directions
/// (a `src/capi/*.rs.in` template) into one function per instance.
///
/// A block starts with `@@ each` and instances separated by `|`, each a list of
/// `name=value` words (a bare word is a flag set to `1`), and ends with `@@ end`. Inside a
/// block, `$name` (or `${name}`, followed by identifier characters) is replaced by the
/// instance's value; an unknown name is an error, so a typo cannot reach the header. A line
/// starting `///=` is kept, as a doc line, only for the instance with the flag `full` (the
/// one documented in full), a line starting `///-` only for the others (which refer to it),
/// and a line starting `///?name=value ` only for the instances where `name` is `value`; a
/// parameter line of a function declaration (`@ name: type - doc`, see [`capi_fn`]) keeps
/// its doc only in the `full` instance. Text outside blocks is copied as is (the `@@ fn`
/// declarations are expanded after this).
fn expand(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let Some(spec) = line.strip_prefix("@@ each") else {
            if line.starts_with("@@") && !line.starts_with("@@ fn ") {
                return Err(format!("{}: stray `{line}`", n + 1));
            }
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let mut body = Vec::new();
        loop {
            match lines.next() {
                Some((_, "@@ end")) => break,
                Some((_, l)) => body.push(l),
                None => return Err(format!("{}: block without `@@ end`", n + 1)),
            }
        }
        for instance in spec.split('|') {
            let vars: Vec<(&str, &str)> = instance
                .split_whitespace()
                .map(|w| w.split_once('=').unwrap_or((w, "1")))
                .collect();
            let full = vars.iter().any(|(k, _)| *k == "full");
            for l in &body {
                let l = match (l.strip_prefix("///="), l.strip_prefix("///-")) {
                    (Some(rest), _) if full => format!("///{rest}"),
                    (_, Some(rest)) if !full => format!("///{rest}"),
                    (Some(_), _) | (_, Some(_)) => continue,
                    _ if l.starts_with("@ ") && !full => {
                        l.split_once(" - ").map_or(*l, |(decl, _)| decl).to_string()
                    }
                    _ => match only_for(l, &vars) {
                        Some(Some(rest)) => format!("///{rest}"),
                        Some(None) => continue,
                        None => (*l).to_string(),
                    },
                };
                out.push_str(&substitute(&l, &vars).map_err(|e| format!("{}: {e}", n + 1))?);
                out.push('\n');
            }
            out.push('\n');
        }
    }
    Ok(out)
}

/// A line `///?name=value text` is a doc line for the instances whose `name` is `value`:
/// `Some(Some(" text"))` for those, `Some(None)` for the others; `None` for any other line.
fn only_for<'a>(line: &'a str, vars: &[(&str, &str)]) -> Option<Option<&'a str>> {
    let rest = line.strip_prefix("///?")?;
    let cond_len = rest.find(' ').unwrap_or(rest.len());
    let cond = &rest[..cond_len];
    let (name, value) = cond.split_once('=').unwrap_or((cond, "1"));
    let matches = vars.iter().any(|(k, v)| *k == name && *v == value);
    Some(matches.then_some(&rest[cond_len..]))
}

/// Replaces each `$name` in `line` by its value in `vars`.
fn substitute(line: &str, vars: &[(&str, &str)]) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        // `${name}` where a name is followed by more identifier characters (`${kind}_t`).
        let (name, len) = match after.strip_prefix('{') {
            Some(braced) => {
                let end = braced.find('}').ok_or("`${` without `}`")?;
                (&braced[..end], end + 2)
            }
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], end)
            }
        };
        let value = vars
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| *v)
            .ok_or_else(|| format!("`${name}` is not set in every instance"))?;
        out.push_str(value);
        rest = &after[len..];
    }
    out.push_str(rest);
    Ok(out)
}
