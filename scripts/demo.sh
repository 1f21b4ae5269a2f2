#!/usr/bin/env bash
# kstate demo: a Kafka Streams 4.4 topology on kstate stores (TopologyTestDriver), its
# per-key aggregates with timestamps and commits with changelog offsets, then a child JVM
# writing through the adapter is SIGKILLed and the committed offset is recovered.
#
# Works on a fresh Debian/Ubuntu machine: installs Gradle (Debian's 4.4.1) and OpenJDK 17
# with apt-get when missing, builds libkstate.so (cargo --release) and the jar, runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        echo "demo.sh: need root (or sudo) to run: $*" >&2; exit 1; fi
}

JDK17=/usr/lib/jvm/java-17-openjdk-amd64
missing=()
[ -x "$JDK17/bin/javac" ] || missing+=(openjdk-17-jdk-headless)
command -v gradle >/dev/null || missing+=(gradle)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "demo.sh: installing ${missing[*]} with apt-get" >&2
    as_root apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi
if ! command -v cargo >/dev/null; then
    echo "demo.sh: cargo is needed to build libkstate.so; install Rust from https://rustup.rs" >&2
    exit 1
fi
# Gradle 4.4.1 runs on JDK 17 (Debian patches it); pin it so another default JDK cannot interfere.
export JAVA_HOME="$JDK17"
export PATH="$JAVA_HOME/bin:$PATH"

# Builds libkstate.so in release mode, packs it into java/build/libs/kstate-streams-0.1.0.jar
# and runs dev.kstate.demo.Demo. Dependencies come from Maven Central.
gradle -q -p java jar demo
