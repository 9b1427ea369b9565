#!/usr/bin/env bash
# make demo: the end-to-end demo (examples/cpp_trainer/peat_demo.cpp). Trains the
# golden model while recording a trace, plays every candidate GEMM back against
# it, names each one's error model, runs runtime FI with two candidates at three
# frequencies against the golden noise band, prints one table and writes
# demo-out/report.json. Extra arguments go to peat_demo (--help lists them).
set -euo pipefail
build=${1:-build}
shift || true
"$build/examples/cpp_trainer/peat_demo" --out demo-out "$@"
"$build/tools/peat/peat" report demo-out/golden.peat demo-out/playback.jsonl demo-out/report.json $(for c in blocked pairwise bf16 tf32 fp16acc splitk_racy tile_drop no_alpha stuck_bit27; do echo --candidate "$build/examples/candidates/libpeat_candidates.so:peat_cand_${c}_kernel"; done) --title "PEAT demo report" -o demo-out/report.html
