#!/usr/bin/env bash
# Installs the Debian packages PEAT needs to build and test, and nothing else.
# Idempotent and quick when everything is present: it asks dpkg first and only runs
# apt-get (update once, then install) for what is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libdlpack-dev libtbb-dev libhwy-dev libzstd-dev libxxhash-dev
  libgmp-dev
  libflatbuffers-dev flatbuffers-compiler libfmt-dev
  catch2 libbenchmark-dev libcli11-dev nlohmann-json3-dev libeigen3-dev
  abigail-tools hipcc libamdhip64-dev rocm-device-libs
  clang-15 libclang-common-15-dev
  python3-numpy python3-torch python3-torchvision python3-pytest python3-setuptools python3-sklearn python3-pip
  libtorch-dev
  libopenblas0-pthread
  openmpi-bin libopenmpi-dev
  python3-jsonschema chromium
)
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
