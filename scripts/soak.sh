#!/usr/bin/env bash
# The soak (issue #27): an hour (KSTATE_SOAK_MINUTES) of SIGKILLs, SIGSTOPs, clean restarts and
# disk-full periods on two exactly_once_v2 instances over kstate's key-value, window and session
# stores on a real broker, then the exactly-once checks. Needs root (or CAP_SYS_ADMIN) to mount the
# small state filesystem; without it the soak runs without disk-full periods and says so.
# The last line of the output is the summary; exit 0 = consistent, 1 = inconsistency,
# 3 = consistent but stalled/crashed unexpectedly, 2 = the soak itself broke.
#   KSTATE_SOAK_MINUTES=60 KSTATE_SOAK_SEED=1 scripts/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
set -euo pipefail
args=(-Dkstate.soak.minutes="${KSTATE_SOAK_MINUTES:-60}")
if [ -n "${KSTATE_SOAK_SEED:-}" ]; then
    args+=(-Dkstate.soak.seed="$KSTATE_SOAK_SEED")
fi
exec gradle -p java soak --console=plain "${args[@]}" "$@"
