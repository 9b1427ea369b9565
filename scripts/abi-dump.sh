#!/usr/bin/env bash
# Writes the ABI of libpeat as libabigail XML: the exported functions and the
# types a C caller can see, i.e. those declared in the public headers
# (include/peat/*.h and DLPack's dlpack.h).
#
# The handles (peat_session_t, peat_aggregator_t, ...) are opaque: the public
# headers only declare them, and their definitions (the library's C++ classes)
# are private. --drop-private-types leaves them declaration-only, so refactoring
# the library's internals is not an ABI change, while any public struct,
# enum or prototype that changes still is. The committed baseline
# (make abi-baseline) and the library under test (tests/abi/check_abi.sh) are
# both written by this script, so the two sides are compared alike.
#
# Usage: abi-dump.sh LIBRARY OUT_XML [DLPACK_HEADER_DIR]
#   DLPACK_HEADER_DIR: the folder holding dlpack.h (default /usr/include/dlpack).
set -euo pipefail
library=$1 out=$2 dlpack=${3:-/usr/include/dlpack}
root=$(cd "$(dirname "$0")/.." && pwd)
[[ -f "$dlpack/dlpack.h" ]] || { echo "abi-dump: no dlpack.h in '$dlpack'" >&2; exit 2; }
exec abidw --exported-interfaces-only --headers-dir "$root/include" --headers-dir "$dlpack" --drop-private-types \
  --no-corpus-path --no-show-locs --out-file "$out" "$library"
