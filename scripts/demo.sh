#!/usr/bin/env bash
# The main job: shows a kstate store committing, being killed mid-transaction and
# recovering exactly its last commit.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo run --release --quiet --bin kstate -- demo "$@"
