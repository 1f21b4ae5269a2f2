#!/usr/bin/env bash
# Installs kstate's C library under a prefix, the way C users install their other
# libraries:
#   PREFIX/include/kstate.h
#   PREFIX/lib/libkstate.so.MAJOR.MINOR.PATCH, with the links libkstate.so.MAJOR (its SONAME)
#   and libkstate.so (for -lkstate)
#   PREFIX/lib/pkgconfig/kstate.pc    (pkg-config --cflags --libs kstate)
# Usage: bash scripts/install.sh [PREFIX]   (default /usr/local; KSTATE_SKIP_CARGO=1 reuses
# target/release/libkstate.so).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-/usr/local}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
major=${version%%.*}
if [[ "${KSTATE_SKIP_CARGO:-0}" != 1 ]]; then
    cargo build --release --lib
fi
lib=target/release/libkstate.so
[[ -f $lib ]] || { echo "install: missing $lib (run cargo build --release --lib)" >&2; exit 1; }
install -d "$prefix/include" "$prefix/lib/pkgconfig"
install -m 0644 include/kstate.h "$prefix/include/kstate.h"
install -m 0755 "$lib" "$prefix/lib/libkstate.so.$version"
ln -sf "libkstate.so.$version" "$prefix/lib/libkstate.so.$major"
ln -sf "libkstate.so.$major" "$prefix/lib/libkstate.so"
cat >"$prefix/lib/pkgconfig/kstate.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: kstate
Description: Timestamped, transactional state stores for Kafka Streams and C callers
Version: $version
Libs: -L\${libdir} -lkstate
Libs.private: -lpthread -ldl -lm
Cflags: -I\${includedir}
PC
echo "installed kstate $version under $prefix"
