#!/usr/bin/env bash
# Builds the portable libkstate for a release: for Linux, against glibc 2.17 (any x86_64 or
# aarch64 Linux from 2014 on: RHEL/CentOS 7+, Amazon Linux 2, Debian 8+, Ubuntu 14.04+)
# with the C++ runtime linked statically, using cargo-zigbuild (zig as the C/C++ compiler and
# linker, with zig's glibc 2.17 stubs and its static libc++).
#
#   bash scripts/release-native.sh [--target TRIPLE] [--jar] [--java-test]
#
#   --target     x86_64-unknown-linux-gnu.2.17 (default), aarch64-unknown-linux-gnu.2.17, or,
#                on a macOS machine, aarch64-apple-darwin / x86_64-apple-darwin (plain cargo)
#   --jar        then packs it into java/build/libs/kstate-streams-<version>.jar
#                (gradle -p java jar -PnativeLib=...; linux-x86_64 only)
#   --java-test  then runs the whole Java suite with it in the jar (gradle -p java test -PnativeLib=...)
#
# Output: target/portable/<os>-<arch>/libkstate.so (.dylib on macOS), the layout that
# `gradle -p java jar -PextraNatives=target/portable` packs next to linux-x86_64. Linux
# libraries are checked with scripts/check-native.sh --max-glibc 2.17 (no GLIBC_ above 2.17,
# no GLIBCXX_/CXXABI_); the build fails if they need more.
#
# Needs cargo-zigbuild and zig: `pip install cargo-zigbuild ziglang` (both on PyPI; or
# `cargo install cargo-zigbuild`), and `rustup target add` for a non-host target. RocksDB is
# compiled again for the target (about as long as the default build, see README), in its own
# target directory ($KSTATE_ZIG_TARGET_DIR, default target/zig) so the default build's
# artifacts stay as they are.
set -euo pipefail
cd "$(dirname "$0")/.."

triple=x86_64-unknown-linux-gnu.2.17
jar=0
java_test=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --target) triple=$2; shift 2 ;;
        --jar) jar=1; shift ;;
        --java-test) java_test=1; shift ;;
        -h | --help) sed -n '2,27p' "$0"; exit 0 ;;
        *) echo "release-native: unknown argument $1" >&2; exit 2 ;;
    esac
done

case $triple in
    x86_64-unknown-linux-gnu*) platform=linux-x86_64 file=libkstate.so ;;
    aarch64-unknown-linux-gnu*) platform=linux-aarch64 file=libkstate.so ;;
    aarch64-apple-darwin) platform=macos-aarch64 file=libkstate.dylib ;;
    x86_64-apple-darwin) platform=macos-x86_64 file=libkstate.dylib ;;
    *) echo "release-native: no platform directory for target $triple" >&2; exit 2 ;;
esac
rust_target=${triple%%.2.*} # cargo-zigbuild's glibc suffix is not part of the Rust target
target_dir=${KSTATE_ZIG_TARGET_DIR:-target/zig}
out=target/portable/$platform
mkdir -p "$out"

start=$(date +%s)
if [[ $platform == linux-* ]]; then
    command -v cargo-zigbuild >/dev/null || { echo "release-native: cargo-zigbuild missing: pip install cargo-zigbuild ziglang" >&2; exit 1; }
    CARGO_TARGET_DIR=$target_dir cargo zigbuild --release --lib --target "$triple"
else
    [[ $(uname -s) == Darwin ]] || { echo "release-native: build $triple on a macOS machine" >&2; exit 1; }
    # libc++ is part of macOS; the deployment target sets the oldest macOS it loads on.
    MACOSX_DEPLOYMENT_TARGET=${MACOSX_DEPLOYMENT_TARGET:-11.0} \
        CARGO_TARGET_DIR=$target_dir cargo build --release --lib --target "$triple"
fi
built=$target_dir/$rust_target/release/$file
cp "$built" "$out/$file.tmp"
mv "$out/$file.tmp" "$out/$file"
echo "release-native: $out/$file ($(du -h "$out/$file" | cut -f1), built in $(($(date +%s) - start)) s)"

if [[ $platform == linux-* ]]; then
    bash scripts/check-native.sh --max-glibc 2.17 "$out/$file"
fi
if [[ $jar == 1 || $java_test == 1 ]]; then
    [[ $platform == linux-x86_64 ]] || { echo "release-native: --jar/--java-test need linux-x86_64" >&2; exit 2; }
    tasks=(jar)
    [[ $java_test == 1 ]] && tasks+=(test)
    gradle -p java "${tasks[@]}" -PnativeLib="$PWD/$out/$file" --console=plain
fi
