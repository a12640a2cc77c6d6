#!/usr/bin/env bash
# Installs the Debian packages ppb builds with (needs root, or sudo). Safe to run again.
set -euo pipefail
packages=(
    build-essential cmake ninja-build
    libboost1.81-dev libboost-json1.81-dev libboost-test1.81-dev libboost-filesystem1.81-dev
    libarmadillo-dev libfmt-dev libyaml-cpp-dev libtomlplusplus-dev libcli11-dev libbenchmark-dev
    libmimalloc-dev  # the ppb command's allocator (PPB_MIMALLOC)
    clang libclang-rt-14-dev
    pybind11-dev python3-pybind11 python3-numpy python3-pytest
    python3-torch  # samples/dryrun-harness: the real dry runs of tests/loop
    chromium  # the HTML report's browser test (tests/report)
)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all packages present"
    exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
