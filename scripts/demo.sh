#!/usr/bin/env bash
# make demo: the end-to-end demo. Until the trainer example lands it shows the
# library's foundation working: version, backends and a session.
set -euo pipefail
build=${1:-build}
if [[ -x "$build/examples/peat_demo" ]]; then
  exec "$build/examples/peat_demo"
fi
exec "$build/tests/c_test_core"
