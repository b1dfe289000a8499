#!/usr/bin/env bash
# Create the benchmark's own venv (bench/.cache/venv-peers) with the peers (mem0, the
# torch MiniLM reference) and troth itself. The project's .venv is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=bench/.cache/venv-peers
test -x "$VENV/bin/python" || python3 -m venv "$VENV"
# troth with its runtime dependencies (pinned exactly in pyproject.toml), then the peers.
"$VENV/bin/pip" install --quiet --disable-pip-version-check -e .
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r bench/requirements-peers.txt
echo "run: HF_HUB_OFFLINE=1 $VENV/bin/python -m bench.locomo --peers"
