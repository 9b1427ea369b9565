#!/usr/bin/env bash
# libpeat_torch must export exactly the functions declared in peat_torch.h.
set -euo pipefail
lib=$1 header=$2
exports=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}' | sed 's/@.*//' | sort -u)
declared=$(grep -o 'peat_torch_[a-z_]*(' "$header" | tr -d '(' | sort -u)
if [[ "$exports" != "$declared" ]]; then
  echo "$lib exports:"; echo "$exports"; echo "peat_torch.h declares:"; echo "$declared"; exit 1
fi
echo "$lib: exports exactly the $(echo "$declared" | wc -l) functions of peat_torch.h"
