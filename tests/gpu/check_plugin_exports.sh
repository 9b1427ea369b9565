#!/usr/bin/env bash
# A backend plugin must export exactly peat_backend_get_api (include/peat/backend.h).
set -euo pipefail
exports=$(nm -D --defined-only "$1" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}' | sed 's/@.*//' | sort -u)
if [[ "$exports" != "peat_backend_get_api" ]]; then
  echo "$1 exports:"; echo "$exports"; echo "expected only peat_backend_get_api"; exit 1
fi
echo "$1: exports only peat_backend_get_api"
