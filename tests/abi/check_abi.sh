#!/usr/bin/env bash
# Compares the built libpeat.so with the committed ABI baseline (abi/libpeat.abi,
# written by `make abi-baseline`) using abidiff on exported interfaces. Both
# sides are written by scripts/abi-dump.sh: public types only, the opaque
# handles declaration-only (their C++ internals are not ABI).
#
#   functions only added                 -> pass (additions are what a minor
#                                           release may do; --no-added-syms)
#   any change to an existing interface  -> FAIL, unless the SONAME was bumped
#   (abidiff bit 4 or 8: removed function, (PEAT_ABI_VERSION). Appending a field to a
#   changed parameter, struct layout...)  struct_size struct is allowed by policy but
#                                           is still reported: refresh the baseline in
#                                           the same commit so review sees it.
# Usage: check_abi.sh LIBRARY BASELINE [DLPACK_HEADER_DIR]
set -uo pipefail
library=$1 baseline=$2 dlpack=${3:-/usr/include/dlpack}
here=$(cd "$(dirname "$0")" && pwd)

if [[ ! -f "$baseline" ]]; then
  echo "no ABI baseline at $baseline: run 'make abi-baseline' and commit it"; exit 1
fi
current=$(mktemp --suffix=.abi)
trap 'rm -f "$current"' EXIT
if ! "$here/../../scripts/abi-dump.sh" "$library" "$current" "$dlpack"; then
  echo "abidw could not read $library"; exit 1
fi
report=$(abidiff --exported-interfaces-only --no-added-syms "$baseline" "$current" 2>&1)
rc=$?
echo "$report"
if (( rc & 1 )) || (( rc & 2 )); then
  echo "abidiff itself failed (exit $rc)"; exit 1
fi
old_soname=$(grep -o "soname='[^']*'" "$baseline" | head -1 | cut -d"'" -f2)
new_soname=$(objdump -p "$library" | awk '/SONAME/ {print $2}')
if (( rc & 12 )); then
  if [[ "$old_soname" != "$new_soname" ]]; then
    echo "ABI change with a new SONAME ($old_soname -> $new_soname): allowed; refresh the baseline (make abi-baseline)"
    exit 0
  fi
  echo "ABI CHANGE to existing interfaces while the SONAME is still $new_soname."
  echo "Either undo it, or (if docs/abi-policy.md allows it, e.g. a field appended to a struct_size struct)"
  echo "refresh the baseline with 'make abi-baseline' in the same commit; an incompatible change needs"
  echo "PEAT_ABI_VERSION and lib/libpeat.map bumped."
  exit 1
fi
echo "ABI check passed against $baseline ($new_soname)"
exit 0
