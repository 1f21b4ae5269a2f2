#!/usr/bin/env bash
# Runs the in-memory engine's unit tests (src/engine/memory: the B+tree's raw node pointers,
# copy-on-write under snapshots, epoch reclamation, node reuse, lazy pins, cursors) under
# Miri, which reports undefined behaviour: use after free, double free, aliasing violations,
# data races between threads, leaks, integer-to-pointer casts (strict provenance).
#
#   bash scripts/miri.sh            # all three passes below
#   bash scripts/miri.sh stacked    # the memory tests under Stacked Borrows
#   bash scripts/miri.sh tree       # the memory tests under Tree Borrows
#   bash scripts/miri.sh seeds      # the racing-readers test under 16 thread schedules
#
# Needs the nightly toolchain with the miri and rust-src components
# (`rustup toolchain install nightly --component miri rust-src`). Not part of
# scripts/test.sh: a full run takes about half an hour on 2 cores (see README.md). Under
# Miri the tests run on fewer keys and proptest cases (`cfg(miri)` in the tests).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo +nightly miri --version >/dev/null 2>&1; then
  echo "miri.sh: needs a nightly toolchain with Miri:" \
    "rustup toolchain install nightly --component miri rust-src" >&2
  exit 2
fi

# The tests never call into RocksDB, but the crate links librocksdb-sys, whose build script
# would compile RocksDB's C++ once more (about 25 minutes) for Miri's target directory. The
# static library of the release build serves instead: it is only linked, never run.
lib=$(ls -t target/release/build/librocksdb-sys-*/out/librocksdb.a 2>/dev/null | head -1 || true)
if [ -n "$lib" ]; then
  export ROCKSDB_LIB_DIR="$PWD/$(dirname "$lib")" ROCKSDB_STATIC=1
else
  echo "miri.sh: no release build of RocksDB in target/release; librocksdb-sys will compile" \
    "it (run 'cargo build --release' first to avoid that)" >&2
fi

# Its own target directory, so that the release build's artifacts are left alone.
target_dir=${KSTATE_MIRI_TARGET_DIR:-target/miri}
# Node addresses are plain pointers, never integers: strict provenance holds.
base_flags="-Zmiri-strict-provenance"

run() {
  local what=$1 flags=$2 filter=$3
  printf '\n==> Miri, %s: MIRIFLAGS="%s" cargo +nightly miri test --lib %s\n' "$what" "$flags" "$filter"
  local start=$SECONDS
  MIRIFLAGS="$flags" cargo +nightly miri test --target-dir "$target_dir" --lib "$filter"
  echo "miri.sh: $what passed in $((SECONDS - start)) s"
}

passes=("$@")
[ "${#passes[@]}" -gt 0 ] || passes=(stacked tree seeds)
for pass in "${passes[@]}"; do
  case "$pass" in
    stacked) run "Stacked Borrows" "$base_flags" engine::memory ;;
    tree) run "Tree Borrows" "$base_flags -Zmiri-tree-borrows" engine::memory ;;
    # One test, many schedules: Miri picks thread switches (and allocation addresses) from
    # its seed, so each seed races the writer and the readers differently.
    seeds) run "16 thread schedules" "$base_flags -Zmiri-many-seeds=0..16" \
      engine::memory::tests::published_views_race_readers ;;
    *) echo "miri.sh: unknown pass '$pass' (stacked, tree, seeds)" >&2; exit 2 ;;
  esac
done
