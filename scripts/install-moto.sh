#!/usr/bin/env bash
# Installs moto's S3 server (PyPI moto[server], pinned) into target/moto-venv (or
# $KSTATE_MOTO_VENV) for the S3 half of the checkpoint tests (tests/remote.rs). Reuses the
# venv when moto_server is already there. Needs python3 with venv and access to PyPI
# (about 70 s the first time).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${KSTATE_MOTO_VENV:-target/moto-venv}
if [ -x "$venv/bin/moto_server" ]; then
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet "moto[server]==5.2.5"
"$venv/bin/moto_server" --help >/dev/null
