#!/usr/bin/env bash
# Proves that the ABI gate (check_abi.sh) can fail: it must
#   1. pass for the built library against the committed baseline;
#   2. FAIL against a copy of the baseline in which a public struct passed to
#      exported functions has another size (what the library would look like to
#      a program built against that baseline: an incompatible change);
#   3. pass for that same change once the SONAME differs (an ABI version bump).
# Usage: gate_test.sh CHECK_ABI LIBRARY BASELINE WORKDIR [DLPACK_HEADER_DIR]
set -uo pipefail
check=$1 library=$2 baseline=$3 work=$4 dlpack=${5:-/usr/include/dlpack}
mkdir -p "$work"
fail=0

"$check" "$library" "$baseline" "$dlpack" >"$work/pass.log" 2>&1
if [[ $? -eq 0 ]]; then echo "ok   the built library passes against the committed baseline"
else echo "FAIL the built library does not pass against the committed baseline:"; cat "$work/pass.log"; fail=1; fi

# peat_trace_reader_options is taken by peat_trace_open and peat_trace_recover.
# Its size is read from the baseline (it grows by appending, release to release).
struct=peat_trace_reader_options
bits=$(grep -o "class-decl name='$struct' size-in-bits='[0-9]*'" "$baseline" | head -1 | grep -o "[0-9]*'$" | tr -d "'")
[[ -n "$bits" ]] || { echo "FAIL baseline lacks $struct"; exit 1; }
sed "s/class-decl name='$struct' size-in-bits='$bits'/class-decl name='$struct' size-in-bits='$((bits + 64))'/" "$baseline" >"$work/changed.abi"
"$check" "$library" "$work/changed.abi" "$dlpack" >"$work/changed.log" 2>&1
rc=$?
if [[ $rc -ne 0 ]] && grep -q "ABI CHANGE" "$work/changed.log" && grep -q "$struct" "$work/changed.log"; then
  echo "ok   a resized $struct fails the gate (exit $rc) and abidiff names it"
else
  echo "FAIL a resized $struct did not fail the gate (exit $rc):"; cat "$work/changed.log"; fail=1
fi

soname=$(grep -o "soname='[^']*'" "$baseline" | head -1 | cut -d"'" -f2)
sed "s/soname='$soname'/soname='$soname.old'/" "$work/changed.abi" >"$work/bumped.abi"
"$check" "$library" "$work/bumped.abi" "$dlpack" >"$work/bumped.log" 2>&1
if [[ $? -eq 0 ]] && grep -q "new SONAME" "$work/bumped.log"; then
  echo "ok   the same change passes when the SONAME differs (ABI version bumped)"
else
  echo "FAIL the change with another SONAME did not pass:"; cat "$work/bumped.log"; fail=1
fi
exit $fail
