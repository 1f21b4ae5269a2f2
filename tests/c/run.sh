#!/usr/bin/env bash
# Runs kstate's C test suite against include/kstate.h and target/release/libkstate.so:
#   1. cargo build --release --lib --features failpoints, kept as
#      target/failpoints/libkstate.so for test_crash (its armed rounds need the crash
#      points), then cargo build --release --lib --example c_fixture: the shipped library
#      for every other program, and the fixture writer test_api reads (all skipped when
#      KSTATE_SKIP_CARGO=1; only the kstate crate is rebuilt, never RocksDB);
#   2. checks that the example in README.md is tests/c/example.c, byte for byte, and that
#      the library's SONAME is libkstate.so.MAJOR; installs the library under a temporary
#      prefix with scripts/install.sh and builds and runs the example against that copy
#      through pkg-config, as a C user would;
#   3. builds every tests/c/*.c with -std=c99 -Wall -Wextra -Werror and
#      -fsanitize=address,undefined, runs them (LeakSanitizer on);
#   4. rebuilds them without sanitizers and runs them under valgrind (smaller sizes via
#      KSTATE_TEST_SMALL=1), requiring no memory errors and 0 bytes definitely lost.
# Test programs print "ok - name" / "not ok - name" per case; a program that fails
# without such a line (crash, sanitizer or valgrind report) counts as one failure.
# The last line is "N passed, M failed"; the exit status is non-zero on any failure.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
LIB="$ROOT/target/release"
BUILD="$ROOT/tests/c/build"
CC=${CC:-cc}
TESTS=(test_api test_window test_window_kinds test_threads test_crash example)
PASSED=0
FAILED=0

# Upgrade by prepare and swap (kstate_kv_upgrade_swap).
TESTS+=(test_swap)

# Versioned key-value stores (kstate_versioned_*): model, misuse and a SIGKILL loop.
TESTS+=(test_versioned)

# Checkpoints of committed state (kstate_*_checkpoint).
TESTS+=(test_checkpoint)

note() { printf '== %s\n' "$*"; }
pass() { PASSED=$((PASSED + 1)); printf 'PASS %s\n' "$*"; }
fail() { FAILED=$((FAILED + 1)); printf 'FAIL %s\n' "$*"; }

FP_LIB="$ROOT/target/failpoints"
FIXTURE_BIN="$LIB/examples/c_fixture"

if [[ "${KSTATE_SKIP_CARGO:-0}" != 1 ]]; then
    note "cargo build --release --lib --features failpoints (for test_crash)"
    cargo build --release --lib --features failpoints
    mkdir -p "$FP_LIB"
    cp "$LIB/libkstate.so" "$FP_LIB/libkstate.so.tmp"
    mv "$FP_LIB/libkstate.so.tmp" "$FP_LIB/libkstate.so"
    note "cargo build --release --lib --example c_fixture"
    cargo build --release --lib --example c_fixture
fi
[[ -f "$LIB/libkstate.so" ]] || { echo "missing $LIB/libkstate.so (run cargo build --release)"; exit 1; }
[[ -f "$FP_LIB/libkstate.so" ]] || { echo "missing $FP_LIB/libkstate.so (run without KSTATE_SKIP_CARGO)"; exit 1; }
[[ -x "$FIXTURE_BIN" ]] || { echo "missing $FIXTURE_BIN (cargo build --release --example c_fixture)"; exit 1; }
[[ -f include/kstate.h ]] || { echo "missing include/kstate.h"; exit 1; }
# Programs linked with -lkstate need the library under its SONAME at run time.
ln -sf libkstate.so "$LIB/libkstate.so.0"
ln -sf libkstate.so "$FP_LIB/libkstate.so.0"

# The documented example must be the compiled one.
if diff <(awk '/^```c$/ {on = 1; next} /^```$/ {on = 0} on' README.md) tests/c/example.c >/dev/null; then
    pass "README.md example is tests/c/example.c"
else
    fail "README.md example differs from tests/c/example.c"
fi

# The library carries the ABI's major version as its SONAME.
soname=$(readelf -d "$LIB/libkstate.so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
if [[ $soname == libkstate.so.0 ]]; then
    pass "libkstate.so has SONAME libkstate.so.0"
else
    fail "libkstate.so has SONAME '$soname', not libkstate.so.0"
fi

# Installed under a prefix, found through pkg-config, linked and run as a C user would.
installed_example() {
    local prefix="$BUILD/prefix" dir out rc=0
    rm -rf "$prefix"
    mkdir -p "$BUILD"
    if ! KSTATE_SKIP_CARGO=1 bash scripts/install.sh "$prefix" >"$BUILD/install.log" 2>&1; then
        fail "scripts/install.sh failed (see $BUILD/install.log)"
        return 0
    fi
    local flags
    if ! flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs kstate); then
        fail "pkg-config does not find the installed kstate.pc"
        return 0
    fi
    # shellcheck disable=SC2086
    if ! "$CC" -std=c99 -Wall -Wextra -Werror tests/c/example.c -o "$BUILD/example-installed" $flags; then
        fail "example does not build against the installed copy (pkg-config: $flags)"
        return 0
    fi
    dir=$(mktemp -d "${TMPDIR:-/tmp}/kstate-installed-XXXXXX")
    out=$(LD_LIBRARY_PATH="$prefix/lib" "$BUILD/example-installed" "$dir/store" 2>&1) || rc=$?
    rm -rf "$dir"
    if [[ $rc -eq 0 && $out == "committed offset: 3"* ]] \
        && [[ $(readelf -d "$BUILD/example-installed" | grep -c 'NEEDED.*libkstate.so.0') == 1 ]]; then
        pass "example built with pkg-config against the installed copy runs (NEEDED libkstate.so.0)"
    else
        fail "example against the installed copy: status $rc, output: $out"
    fi
}
installed_example

# The header stands alone: strict C99, and C++ (it has extern "C" guards).
header_check() { # name compiler flags...
    local name=$1
    shift
    if printf '#include "kstate.h"\nint main(void) { return kstate_version() == 0; }\n' |
        "$@" -Iinclude -Wall -Wextra -Werror -fsyntax-only - 2>"$BUILD/header-$name.err"; then
        pass "include/kstate.h compiles alone ($name)"
    else
        fail "include/kstate.h does not compile alone ($name)"
        sed 's/^/    /' "$BUILD/header-$name.err" | head -20
    fi
}
mkdir -p "$BUILD"
header_check c99-pedantic "$CC" -x c -std=c99 -pedantic-errors
if command -v "${CXX:-c++}" >/dev/null 2>&1; then
    header_check c++11 "${CXX:-c++}" -x c++ -std=c++11 -pedantic-errors
fi

# Ignored error results: every function returning kstate_error_t* is KSTATE_MUST_USE in the
# header, and a program that drops one does not compile with -Werror.
must_use_check() {
    local unmarked
    unmarked=$(awk '/^struct kstate_error_t \*kstate_/ && prev != "KSTATE_MUST_USE" {print $3} {prev = $0}' include/kstate.h)
    local marked
    marked=$(grep -cE '^(KSTATE_MUST_USE )?struct kstate_error_t \*kstate_' include/kstate.h || true)
    if [[ -z $unmarked && $marked -gt 0 ]]; then
        pass "every kstate_error_t* function is KSTATE_MUST_USE ($marked)"
    else
        fail "functions returning kstate_error_t* without KSTATE_MUST_USE: ${unmarked:-none marked at all}"
    fi
    local src="$BUILD/ignored-result.c"
    printf '#include "kstate.h"\nint main(void) {\n    kstate_kv_close(NULL);\n    return 0;\n}\n' >"$src"
    if "$CC" -std=c99 -Wall -Werror -Iinclude -c "$src" -o "$BUILD/ignored-result.o" 2>"$BUILD/ignored-result.err"; then
        fail "a program ignoring kstate_kv_close's result compiles with -Werror"
    elif grep -q 'unused-result\|warn_unused_result' "$BUILD/ignored-result.err"; then
        pass "ignoring an error result fails to compile with -Werror ($(grep -o -- '-Werror=unused-result\|warn_unused_result' "$BUILD/ignored-result.err" | head -1))"
    else
        fail "ignoring an error result failed to compile for another reason"
        sed 's/^/    /' "$BUILD/ignored-result.err" | head -10
    fi
    # The same call with its result used compiles: the failure above is the attribute's.
    printf '#include "kstate.h"\nint main(void) {\n    kstate_error_t *e = kstate_kv_close(NULL);\n    kstate_error_free(e);\n    return 0;\n}\n' >"$src"
    if "$CC" -std=c99 -Wall -Werror -Iinclude -c "$src" -o "$BUILD/ignored-result.o" 2>"$BUILD/ignored-result.err"; then
        pass "using the error result compiles with -Werror"
    else
        fail "using the error result does not compile"
        sed 's/^/    /' "$BUILD/ignored-result.err" | head -10
    fi
}
must_use_check

# What the library asks of the machine that loads it (scripts/check-native.sh): no C++
# runtime symbol versions. The check itself must be able to fail: a library built the usual
# way with the shared libstdc++ fails it, and so does libkstate.so held to a glibc older
# than the newest it needs.
native_check() {
    local out
    if out=$(bash scripts/check-native.sh "$LIB/libkstate.so"); then
        pass "libkstate.so needs no C++ runtime: ${out#ok   }"
    else
        fail "libkstate.so: $out"
    fi
    local cxx=${CXX:-c++}
    if command -v "$cxx" >/dev/null 2>&1; then
        printf '#include <string>\nextern "C" int f(const char *s) { return (int)std::string(s).size(); }\n' >"$BUILD/cxx-runtime.cc"
        if "$cxx" -shared -fPIC "$BUILD/cxx-runtime.cc" -o "$BUILD/libcxx-runtime.so" 2>/dev/null; then
            if out=$(bash scripts/check-native.sh "$BUILD/libcxx-runtime.so"); then
                fail "check-native.sh passes a library linked to the shared libstdc++"
            elif [[ $out == *GLIBCXX_* || $out == *"shared C++ runtime"* ]]; then
                pass "check-native.sh refuses a library linked to the shared libstdc++"
            else
                fail "check-native.sh fails a libstdc++ library without naming it: $out"
            fi
        fi
    fi
    local newest older
    newest=$(objdump -T "$LIB/libkstate.so" | awk '/\*UND\*/' | grep -oE 'GLIBC_[0-9.]+' | sed 's/GLIBC_//' | sort -V | tail -1)
    if [[ $newest =~ ^([0-9]+)\.([0-9]+) ]] && [[ ${BASH_REMATCH[2]} -gt 0 ]]; then
        older="${BASH_REMATCH[1]}.$((BASH_REMATCH[2] - 1))"
        if out=$(bash scripts/check-native.sh --max-glibc "$older" "$LIB/libkstate.so"); then
            fail "check-native.sh --max-glibc $older passes a library needing GLIBC_$newest"
        elif [[ $out == *"GLIBC_$newest"* ]]; then
            pass "check-native.sh --max-glibc $older refuses a library needing GLIBC_$newest"
        else
            fail "check-native.sh --max-glibc $older: unexpected output: $out"
        fi
    fi
    # The portable build, when scripts/release-native.sh has made one.
    local portable="$ROOT/target/portable/linux-x86_64/libkstate.so"
    if [[ -f $portable ]]; then
        if out=$(bash scripts/check-native.sh --max-glibc 2.17 "$portable"); then
            pass "portable libkstate.so: ${out#ok   }"
        else
            fail "portable libkstate.so: $out"
        fi
    fi
}
native_check

CFLAGS=(-std=c99 -Wall -Wextra -Werror -g -O1 -Iinclude -pthread)
LDFLAGS=(-L"$LIB" -lkstate -pthread)
SAN=(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)

build() { # mode flags...
    local mode=$1
    shift
    mkdir -p "$BUILD/$mode"
    for t in "${TESTS[@]}"; do
        rm -f "$BUILD/$mode/$t" # a program that no longer compiles must not run its old binary
        if "$CC" "${CFLAGS[@]}" "$@" "tests/c/$t.c" -o "$BUILD/$mode/$t" "${LDFLAGS[@]}"; then
            :
        else
            fail "$t [$mode]: does not compile"
        fi
    done
}

# Runs one program; counts its "ok"/"not ok" lines. Extra arguments wrap the command.
run_one() { # mode name log cmd...
    local mode=$1 name=$2 log=$3
    shift 3
    local rc=0 lib="$LIB"
    # test_crash (and the children it execs) runs on the library with crash points.
    [[ $name == test_crash ]] && lib="$FP_LIB"
    # test_api reads a fresh fixture store (kstate adopts it on open, so one per run).
    local fixture="$BUILD/$mode/fixture-$name"
    rm -rf "$fixture"
    if [[ $name == test_api ]] && ! "$FIXTURE_BIN" "$fixture" >"$log.fixture" 2>&1; then
        fail "$name [$mode]: c_fixture failed (see $log.fixture)"
    fi
    ( export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      export KSTATE_C_FIXTURE="$fixture"
      timeout 900 "$@" ) >"$log.out" 2>"$log.err" || rc=$?
    rm -rf "$fixture"
    local ok notok
    ok=$(grep -c '^ok - ' "$log.out" || true)
    notok=$(grep -c '^not ok - ' "$log.out" || true)
    while read -r line; do pass "$name [$mode]: ${line#ok - }"; done < <(grep '^ok - ' "$log.out" || true)
    while read -r line; do fail "$name [$mode]: ${line#not ok - }"; done < <(grep '^not ok - ' "$log.out" || true)
    if [[ $rc -ne 0 && $notok -eq 0 ]]; then
        fail "$name [$mode]: exited with status $rc (see $log.err)"
    fi
    if [[ $rc -ne 0 || $notok -ne 0 ]]; then
        sed 's/^/    /' "$log.err" | tail -40
    fi
    if [[ $rc -eq 0 && $ok -eq 0 && $notok -eq 0 ]]; then
        fail "$name [$mode]: ran no test case"
    fi
    return 0
}

# The example: compiled and run as documented, on a fresh store.
run_example() { # mode cmd-prefix...
    local mode=$1
    shift
    local dir rc=0
    dir=$(mktemp -d "${TMPDIR:-/tmp}/kstate-example-XXXXXX")
    ( export LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      timeout 300 "$@" "$BUILD/$mode/example" "$dir/store" ) \
        >"$BUILD/$mode/example.out" 2>"$BUILD/$mode/example.err" || rc=$?
    rm -rf "$dir"
    local expected='committed offset: 3
apple = 2 (timestamp 1700000000002)
banana = 1 (timestamp 1700000000001)
cherry = 1 (timestamp 1700000000003)'
    if [[ $rc -eq 0 && "$(cat "$BUILD/$mode/example.out")" == "$expected" ]]; then
        pass "example [$mode]: documented output"
    else
        fail "example [$mode]: status $rc or unexpected output"
        sed 's/^/    /' "$BUILD/$mode/example.out" "$BUILD/$mode/example.err" | tail -40
    fi
}

# ---- AddressSanitizer + UndefinedBehaviorSanitizer ---------------------------------------
note "building with -fsanitize=address,undefined"
build asan "${SAN[@]}"
SUPP="$ROOT/tests/c/lsan.supp"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
if [[ -s "$SUPP" ]]; then
    export LSAN_OPTIONS="suppressions=$SUPP:print_suppressions=0"
fi
for t in "${TESTS[@]}"; do
    [[ -x "$BUILD/asan/$t" ]] || continue
    note "run $t [asan]"
    if [[ $t == example ]]; then
        run_example asan
    else
        run_one asan "$t" "$BUILD/asan/$t" "$BUILD/asan/$t"
    fi
done
unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS

# ---- valgrind -----------------------------------------------------------------------------
if ! command -v valgrind >/dev/null 2>&1; then
    note "installing valgrind"
    if command -v apt-get >/dev/null 2>&1; then
        (apt-get update -qq && apt-get install -y -qq valgrind) >/dev/null 2>&1 || true
    fi
fi
if command -v valgrind >/dev/null 2>&1; then
    note "building without sanitizers for valgrind"
    build valgrind
    export KSTATE_TEST_SMALL=1
    for t in "${TESTS[@]}"; do
        [[ -x "$BUILD/valgrind/$t" ]] || continue
        note "run $t [valgrind]"
        vdir="$BUILD/valgrind/$t.vg"
        rm -rf "$vdir" && mkdir -p "$vdir"
        # One log per process (%p): forked children are traced until they exec.
        # --fair-sched=yes: valgrind runs one thread at a time, and its default lock lets
        # spinning reader threads starve the writer in test_threads for many minutes.
        VG=(valgrind --fair-sched=yes --leak-check=full --errors-for-leak-kinds=definite
            --error-exitcode=1 --log-file="$vdir/%p.log")
        if [[ $t == example ]]; then
            run_example valgrind "${VG[@]}"
        else
            run_one valgrind "$t" "$BUILD/valgrind/$t" "${VG[@]}" "$BUILD/valgrind/$t"
        fi
        # The main process's log has the leak summary; every log must show 0 errors.
        main_log=$(grep -l 'LEAK SUMMARY\|All heap blocks were freed' "$vdir"/*.log | head -1 || true)
        lost=$(grep -ho 'definitely lost: [0-9,]* bytes' "$vdir"/*.log | grep -v ': 0 bytes' || true)
        bad=$(grep -l 'ERROR SUMMARY: [1-9]' "$vdir"/*.log || true)
        if [[ -z $main_log || -n $lost || -n $bad ]]; then
            fail "$t [valgrind]: memory errors or definite leaks (see $vdir)"
            cat "$vdir"/*.log | grep -v '^==[0-9]*== *$' | head -80 | sed 's/^/    /'
        else
            summary=$(grep -ho 'definitely lost: [0-9,]* bytes in [0-9,]* blocks\|All heap blocks were freed' "$main_log" | head -1)
            pass "$t [valgrind]: ERROR SUMMARY: 0 errors; ${summary}"
        fi
    done
    unset KSTATE_TEST_SMALL
else
    fail "valgrind is not installed and could not be installed"
fi

echo "$PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
