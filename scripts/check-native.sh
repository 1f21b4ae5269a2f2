#!/usr/bin/env bash
# Checks what a built libkstate.so asks of the machine that loads it, from its dynamic
# symbol versions (objdump -T, undefined symbols only) and its NEEDED libraries:
#   - no C++ runtime: no GLIBCXX_* / CXXABI_* symbol version and no libstdc++ NEEDED (the
#     default build links libstdc++ statically, see build.rs; the zig build links libc++
#     statically);
#   - with --max-glibc X.Y: no GLIBC_* version above X.Y (2.17 for the portable build of
#     scripts/release-native.sh, which then loads on any x86_64 Linux from 2014 on).
# Usage: bash scripts/check-native.sh [--max-glibc X.Y] LIB...
# Prints one line per library; exits non-zero if any library fails.
set -euo pipefail

max_glibc=
libs=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --max-glibc) max_glibc=$2; shift 2 ;;
        -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
        *) libs+=("$1"); shift ;;
    esac
done
[[ ${#libs[@]} -gt 0 ]] || { echo "usage: $0 [--max-glibc X.Y] LIB..." >&2; exit 2; }
command -v objdump >/dev/null || { echo "check-native: objdump (binutils) is required" >&2; exit 2; }

status=0
for lib in "${libs[@]}"; do
    if [[ ! -f $lib ]]; then
        echo "FAIL $lib: no such file"
        status=1
        continue
    fi
    # Undefined dynamic symbols carry the version they need, e.g. "(GLIBC_2.34) memcpy".
    versions=$(objdump -T "$lib" | awk '/\*UND\*/' | grep -oE '\b(GLIBC|GLIBCXX|CXXABI)_[0-9][0-9.]*' | sort -uV || true)
    needed=$(objdump -p "$lib" | awk '$1 == "NEEDED" {print $2}' | tr '\n' ' ')
    glibc_max=$(grep -E '^GLIBC_' <<<"$versions" | sed 's/^GLIBC_//' | sort -V | tail -1 || true)
    cxx=$(grep -E '^(GLIBCXX|CXXABI)_' <<<"$versions" | tr '\n' ' ' || true)
    problems=()
    if [[ -n $cxx ]]; then
        problems+=("needs the C++ runtime's symbol versions: $cxx")
    fi
    if [[ $needed == *libstdc++* || $needed == *libc++* ]]; then
        problems+=("links a shared C++ runtime (NEEDED: $needed)")
    fi
    if [[ -n $max_glibc && -n $glibc_max ]] &&
        [[ $(printf '%s\n%s\n' "$glibc_max" "$max_glibc" | sort -V | tail -1) != "$max_glibc" ]]; then
        above=
        for v in $(grep -E '^GLIBC_' <<<"$versions" | sed 's/^GLIBC_//'); do
            if [[ $(printf '%s\n%s\n' "$v" "$max_glibc" | sort -V | tail -1) != "$max_glibc" ]]; then
                above+="GLIBC_$v "
            fi
        done
        problems+=("needs glibc $glibc_max, above $max_glibc: $above")
    fi
    if [[ ${#problems[@]} -eq 0 ]]; then
        echo "ok   $lib: glibc ${glibc_max:-none} at most${max_glibc:+ (<= $max_glibc)}, no C++ runtime symbols; NEEDED: $needed"
    else
        status=1
        for p in "${problems[@]}"; do
            echo "FAIL $lib: $p"
        done
    fi
done
exit $status
