#!/usr/bin/env bash
# Runs every kstate check and test: formatting, clippy, Rust unit/model/crash/error/large
# transaction tests and doc tests, the object-store checkpoint tests (feature `remote`, with
# a moto S3 server), the C suite (sanitizers + valgrind, the native library's
# symbol-version check), the Java suite, and a Maven project built against the published jar.
# Everything is built once, in release mode, so RocksDB is compiled a single time.
#
# The crash tests need kstate's crash points, which only the cargo feature `failpoints`
# compiles in (the shipped library and CLI ignore KSTATE_FAILPOINT_ODDS). Turning the
# feature on recompiles the kstate crate alone, never RocksDB; the default build runs last,
# so target/release holds the shipped artifacts when this script ends.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

log_dir=target/test-logs
mkdir -p "$log_dir"

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --check

step "cargo clippy (release, all targets, -D warnings; default, failpoints and remote features)"
cargo clippy --release --all-targets -- -D warnings
cargo clippy --release --all-targets --features failpoints -- -D warnings
[ "${KSTATE_SKIP_REMOTE:-0}" = 1 ] || cargo clippy --release --all-targets --features remote -- -D warnings

step "cargo test --release --features failpoints (crash tests with armed crash points)"
cargo test --release --features failpoints --test crash --test failpoints --test export --test segment_adoption 2>&1 |
  tee "$log_dir/cargo-test-failpoints.log"

# Checkpoints in an object store (feature `remote`): file:// and a moto S3 server the test
# starts on 127.0.0.1. moto comes from PyPI into target/moto-venv (scripts/install-moto.sh,
# reused when present); without it the S3 test fails unless KSTATE_SKIP_S3=1. The feature's
# dependencies (object_store, aws-lc, tokio) cost about 6 CPU-minutes to compile once;
# KSTATE_SKIP_REMOTE=1 skips this step (and its clippy run above).
: > "$log_dir/cargo-test-remote.log"
if [ "${KSTATE_SKIP_REMOTE:-0}" != 1 ]; then
  step "cargo test --release --features remote --test remote --test cli_checkpoint (checkpoints in file:// and S3/moto targets, the checkpoint CLI)"
  bash scripts/install-moto.sh || echo "moto could not be installed: the S3 checkpoint test will fail (KSTATE_SKIP_S3=1 skips it)"
  cargo test --release --features remote --test remote --test cli_checkpoint --bin kstate 2>&1 | tee "$log_dir/cargo-test-remote.log"
fi

step "cargo test --release"
cargo test --release 2>&1 | tee "$log_dir/cargo-test.log"
cat target/kstate-large-txn.txt 2>/dev/null || true

# Bounded fuzzing: every target of fuzz/ for KSTATE_FUZZ_SECONDS (15 s) each. Its build
# links the librocksdb.a just built, so it never compiles RocksDB. A failure is counted and
# fails the run at the end, after the other suites.
f_passed=0; f_failed=0
if [ -f scripts/fuzz.sh ]; then
  step "fuzz targets, ${KSTATE_FUZZ_SECONDS:-15} s each (scripts/fuzz.sh: libFuzzer on stable Rust)"
  bash scripts/fuzz.sh 2>&1 | tee "$log_dir/fuzz.log" || true
  read -r f_passed f_failed < <(grep -E '^fuzz: [0-9]+ passed, [0-9]+ failed' "$log_dir/fuzz.log" | tail -1 | awk '{print $2, $4}') || true
  f_passed=${f_passed:-0}; f_failed=${f_failed:-1}
fi

if [ -f build.rs ] && [ -f include/kstate.h ] && git rev-parse --git-dir >/dev/null 2>&1; then
  step "include/kstate.h is up to date"
  git diff --exit-code -- include/kstate.h || { echo "include/kstate.h is stale: commit the regenerated header"; exit 1; }
fi

c_passed=0; c_failed=0
if [ -f tests/c/run.sh ]; then
  step "C suite (ASan/UBSan, valgrind)"
  bash tests/c/run.sh 2>&1 | tee "$log_dir/c-suite.log"
  read -r c_passed c_failed < <(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log_dir/c-suite.log" | tail -1 | awk '{print $1, $3}')
fi

j_passed=0; j_failed=0
if [ -f java/build.gradle ]; then
  step "Java suite (gradle -p java test compatTest brokerTest, -Xcheck:jni; compatTest = Kafka Streams 4.0, 4.2, 4.3; brokerTest = exactly-once on a real Kafka 4.4 broker)"
  gradle -p java test compatTest brokerTest --console=plain
  for f in java/build/test-results/test/*.xml java/build/test-results/testKafka*/*.xml java/build/test-results/brokerTest/*.xml; do
    [ -f "$f" ] || continue
    t=$(grep -o 'tests="[0-9]*"' "$f" | head -1 | tr -dc 0-9)
    fl=$(grep -o 'failures="[0-9]*"' "$f" | head -1 | tr -dc 0-9)
    er=$(grep -o 'errors="[0-9]*"' "$f" | head -1 | tr -dc 0-9)
    j_passed=$((j_passed + t - fl - er)); j_failed=$((j_failed + fl + er))
  done
fi

m_passed=0; m_failed=0
if [ -f scripts/test-maven-user.sh ] && [ -f java/build.gradle ]; then
  step "Maven user project (publishToMavenLocal, then tests/maven-user built with mvn against it)"
  bash scripts/test-maven-user.sh 2>&1 | tee "$log_dir/maven-user.log" || true
  read -r m_passed m_failed < <(grep -E '^maven user project: [0-9]+ passed' "$log_dir/maven-user.log" | tail -1 | awk '{print $4, $6}')
  m_passed=${m_passed:-0}; m_failed=${m_failed:-1}
fi

r_logs=("$log_dir/cargo-test-failpoints.log" "$log_dir/cargo-test-remote.log" "$log_dir/cargo-test.log")
r_passed=$(cat "${r_logs[@]}" | grep -E '^test result:' | awk '{s+=$4} END {print s+0}')
r_failed=$(cat "${r_logs[@]}" | grep -E '^test result:' | awk '{s+=$6} END {print s+0}')
echo
echo "rust: $r_passed passed, $r_failed failed; c: $c_passed passed, $c_failed failed; java: $j_passed passed, $j_failed failed; maven user project: $m_passed passed, $m_failed failed; fuzz targets: $f_passed passed, $f_failed failed"
echo "kstate: $((r_passed + c_passed + j_passed + m_passed)) passed, $((r_failed + c_failed + j_failed + m_failed + f_failed)) failed"
[ "$m_failed" -eq 0 ] && [ "$f_failed" -eq 0 ]
