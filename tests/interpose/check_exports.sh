#!/usr/bin/env bash
# An interposer must export exactly the global names of its version script:
# the functions it wraps (or, for the CUPTI tracer, InitializeInjection).
# Usage: check_exports.sh <library> <version script>
set -euo pipefail
lib=$1 map=$2
exports=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}' | sed 's/@.*//' | sort -u)
wanted=$(sed -n '/global:/,/local:/p' "$map" | grep -o '^ *[A-Za-z_][A-Za-z0-9_]*;' | tr -d ' ;' | sort -u)
if [[ "$exports" != "$wanted" ]]; then
  echo "$lib exports:"; echo "$exports"; echo "expected (from $map):"; echo "$wanted"; exit 1
fi
echo "$lib exports exactly the $(echo "$wanted" | wc -l) functions of $(basename "$map")"
