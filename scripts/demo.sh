#!/usr/bin/env bash
# make demo: the end-to-end demo (examples/cpp_trainer/peat_demo.cpp). Trains the
# golden model while recording a trace, plays every candidate GEMM back against
# it, names each one's error model, runs runtime FI with two candidates at three
# frequencies against the golden noise band, prints one table and writes
# demo-out/report.json. Extra arguments go to peat_demo (--help lists them).
set -euo pipefail
build=${1:-build}
shift || true
exec "$build/examples/cpp_trainer/peat_demo" --out demo-out "$@"
