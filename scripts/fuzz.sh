#!/usr/bin/env bash
# Builds kstate's fuzz targets (fuzz/, libFuzzer through libfuzzer-sys, stable toolchain) and
# runs each for KSTATE_FUZZ_SECONDS seconds (default 15), then prints one line per target
# (executions, libFuzzer's cov/ft counts, corpus size) and `fuzz: N passed, M failed`.
#
#   bash scripts/fuzz.sh                          # bounded run, as scripts/test.sh does
#   KSTATE_FUZZ_SECONDS=300 bash scripts/fuzz.sh  # long run: 5 minutes per target
#   bash scripts/fuzz.sh capi_kv meta             # only these targets
#   bash scripts/fuzz.sh --seeds                  # regenerate fuzz/corpus/ from real stores
#
# Stable rustc takes the sanitizer-coverage passes as plain codegen flags (cargo-fuzz needs
# nightly only for -Zsanitizer, which these targets do without). The flags go to the target
# crates only (`--target`), not to build scripts and proc macros, which must not be
# instrumented. RocksDB is not compiled again: the build links the librocksdb.a the main
# release build made (ROCKSDB_LIB_DIR + ROCKSDB_STATIC), so run `cargo build --release`
# first (scripts/test.sh has, by the time it gets here).
#
# Inputs that found something are written to target/fuzz/artifacts/<target>/; replay one
# with `target/fuzz/<triple>/release/<target> <file>`. New corpus entries go to
# target/fuzz/corpus/<target>/; the seeds in fuzz/corpus/<target>/ are only read.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

seconds=${KSTATE_FUZZ_SECONDS:-15}
all_targets=(meta values segmented versioned kafka_offsets jni_codec capi_kv capi_kv_rocksdb capi_segmented
  capi_segmented_rocksdb store_dir cli)
targets=()
for a in "$@"; do [ "$a" = --seeds ] || targets+=("$a"); done
[ "${#targets[@]}" -gt 0 ] || targets=("${all_targets[@]}")

rocksdb_a=$(ls -t target/release/build/librocksdb-sys-*/out/librocksdb.a 2>/dev/null | head -1 || true)
if [ -z "$rocksdb_a" ]; then
  echo "fuzz: no target/release/build/librocksdb-sys-*/out/librocksdb.a; run 'cargo build --release' first" >&2
  echo "fuzz: 0 passed, ${#targets[@]} failed"
  exit 1
fi
export ROCKSDB_LIB_DIR="$PWD/$(dirname "$rocksdb_a")" ROCKSDB_STATIC=1
export CARGO_TARGET_DIR="$PWD/target/fuzz"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
host=$(rustc -vV | sed -n 's/^host: //p')

# libFuzzer flags per target: the structured targets (a call sequence, a store layout) read
# their input through `arbitrary`, so they get long inputs from the start.
flags_for() {
  case "$1" in
    capi_kv | capi_kv_rocksdb | capi_segmented | capi_segmented_rocksdb | versioned)
      echo "-len_control=0 -max_len=1024" ;;
    store_dir) echo "-len_control=0 -max_len=512" ;;
    # The CLI prints reports and clap's messages: its stdout and stderr are closed
    # (libFuzzer keeps its own copy of stderr for its report).
    cli) echo "-len_control=0 -max_len=512 -close_fd_mask=3" ;;
    *) echo "-max_len=4096" ;;
  esac
}

start=$(date +%s)
if [ "${1:-}" = --seeds ]; then
  # Regenerates fuzz/corpus/ from real stores (fuzz/examples/seeds.rs); by hand only.
  cargo run --release --manifest-path fuzz/Cargo.toml --target "$host" --example seeds
  exit 0
fi
echo "fuzz: building ${#targets[@]} targets (librocksdb.a from $rocksdb_a)"
build_args=()
for t in "${targets[@]}"; do build_args+=(--bin "$t"); done
cargo build --release --manifest-path fuzz/Cargo.toml --target "$host" "${build_args[@]}"
echo "fuzz: build took $(( $(date +%s) - start )) s"

log_dir=target/fuzz/logs
mkdir -p "$log_dir"
passed=0; failed=0
summary=()
for t in "${targets[@]}"; do
  corpus=target/fuzz/corpus/$t artifacts=target/fuzz/artifacts/$t
  mkdir -p "$corpus" "$artifacts" "fuzz/corpus/$t"
  log=$log_dir/$t.log
  # New inputs go to the first directory; the checked-in seeds are read only.
  if "target/fuzz/$host/release/$t" "$corpus" "fuzz/corpus/$t" \
      -max_total_time="$seconds" -print_final_stats=1 -timeout=120 -rss_limit_mb=2048 \
      $(flags_for "$t") -artifact_prefix="$artifacts/" >"$log" 2>&1; then
    status=ok; passed=$((passed + 1))
  else
    status=FAILED; failed=$((failed + 1))
    tail -n 40 "$log"
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  line=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$line")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$line")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$line")
  summary+=("$(printf '%-22s %-7s %10s %7s %7s %7s' "$t" "$status" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}")")
done

echo
echo "fuzz summary: ${seconds} s per target, $(( $(date +%s) - start )) s in all (build included)"
printf '%-22s %-7s %10s %7s %7s %7s\n' target result execs cov ft corpus
printf '%s\n' "${summary[@]}"
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
