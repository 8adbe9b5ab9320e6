#!/usr/bin/env bash
# Installs sapp's build and test dependencies from Debian's archive (Debian 12 "bookworm").
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
PACKAGES=(build-essential cmake ninja-build pkg-config clang clang-format clang-tidy libclang-rt-14-dev
  libyaml-cpp-dev nlohmann-json3-dev libtomlplusplus-dev libcli11-dev libfmt-dev
  libeigen3-dev libglpk-dev libgtest-dev libbenchmark-dev python3 python3-dev pybind11-dev pybind11-json-dev chromium time)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
