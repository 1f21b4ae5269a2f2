#!/usr/bin/env bash
# The main job: a Kafka Streams 4.4 topology on kstate stores (TopologyTestDriver) prints
# its per-key aggregates with timestamps and its commits with changelog offsets; then a
# child JVM writing through the adapter is SIGKILLed and the committed offset recovered.
#
# Works on a fresh Debian machine with only the toolchains: scripts/setup.sh installs
# clang/libclang (RocksDB's bindings), Debian's Gradle 4.4.1, and pins JAVA_HOME to JDK 17.
# Gradle builds libkstate.so (cargo --release), packs it into
# java/build/libs/kstate-streams-0.1.0.jar and runs dev.kstate.demo.Demo; Java
# dependencies come from Maven Central.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
gradle -q -p java jar demo
