#!/usr/bin/env bash
# The main job, in two steps:
#  1. a quick look (TopologyTestDriver, no broker): a Kafka Streams 4.4 topology on kstate stores
#     prints its per-key aggregates with timestamps and its commits with changelog offsets, and a
#     child JVM writing through the adapter is SIGKILLed and its committed offset recovered;
#  2. on a real broker: a single-node Kafka 4.4 broker (KRaft, 127.0.0.1, started from Maven
#     Central's kafka_2.13 jars by the project's own code) runs the same kind of application on
#     kstate stores and on Kafka's own RocksDB stores; each is SIGKILLed mid-processing and
#     restarted, and the demo prints side by side what each store did on restart (records
#     restored, time to RUNNING), interactive queries at both isolation levels, and the
#     exactly-once check of the outputs. The broker is stopped at the end.
#
# Works on a fresh Debian machine with only the toolchains: scripts/setup.sh installs
# clang/libclang (RocksDB's bindings), Debian's Gradle 4.4.1, and pins JAVA_HOME to JDK 17.
# Gradle builds libkstate.so and the kstate CLI (cargo --release), packs the library into
# java/build/libs/kstate-streams-0.1.0.jar; Java dependencies come from Maven Central.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
gradle -q -p java jar demo
echo
gradle -q -p java brokerDemo
