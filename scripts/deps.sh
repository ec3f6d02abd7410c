#!/usr/bin/env bash
# Installs the Debian 12 packages Gangway builds with, only those that are missing.
set -euo pipefail
packages=(cmake ninja-build g++ make nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libfmt-dev
          libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev libsqlite3-dev liblzma-dev
          libcpp-httplib-dev libssl-dev openssl pkg-config gnuplot-nox
          # etcd members for the high-availability tests (started by the tests on loopback).
          etcd-server
          # Containers (issue 19): podman with runc, its network backend (for podman's own
          # checks; tasks use the host's network), and a static busybox the tests import as
          # an image, so no registry is needed.
          podman runc netavark catatonit busybox-static
          # The fuzz targets (fuzz/) build with clang; libFuzzer and the sanitizer runtimes
          # are in libclang-rt-dev, which clang only recommends.
          clang libclang-rt-dev
          # The dashboard's browser tests (web/tests): Debian's chromium, driven by
          # playwright-core, and a font for its text.
          chromium fonts-dejavu-core)
# Node.js and npm for the dashboard's packages (web/package-lock.json) and its tests; a
# machine that has them already (say from NodeSource, whose nodejs bundles npm) keeps its own.
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "gangway: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The dashboard's npm packages, exactly as package-lock.json pins them; again only when the
# lock changed since the last install.
web="$(cd "$(dirname "$0")/../web" && pwd)"
if [[ ! -f $web/node_modules/.package-lock.json || $web/package-lock.json -nt $web/node_modules/.package-lock.json ]]; then
  echo "gangway: installing the dashboard's npm packages (npm ci in web/)" >&2
  (cd "$web" && npm ci --no-audit --no-fund --loglevel=error)
fi
