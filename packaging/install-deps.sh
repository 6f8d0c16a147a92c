#!/usr/bin/env bash
# Installs every Debian 12 package BatchPilot's build, tests and CI need, then
# libtorch (packaging/install-torch.sh: PyPI's torch wheel, unpacked into a
# cache folder). Idempotent: when everything is present it only runs
# `dpkg-query` and checks a stamp (well under a second). Works as root or
# through sudo.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config git clang lld
  # Qt 6 (HttpServer needs WebSockets installed to be found by CMake)
  qt6-base-dev qt6-base-dev-tools qt6-charts-dev qt6-httpserver-dev
  qt6-websockets-dev qt6-svg-dev libgl-dev libqt6opengl6-dev
  # engine (libtorch comes from PyPI: install-torch.sh)
  libsqlite3-dev sqlite3 nlohmann-json3-dev
  # Hugging Face tokenizers: the split patterns (PCRE2) and NFC (utf8proc);
  # OpenBLAS for the CPU's float32 products (engine/torch/cpu_blas.h)
  libpcre2-dev libutf8proc-dev libopenblas-pthread-dev
  # fetching and unpacking the torch wheel; tests: TorchScript fixtures (made
  # with that torch), Prometheus checks, offscreen fonts
  python3 python3-pip unzip prometheus fonts-dejavu-core
  # tests/k8s: the autoscaler manifests against the vendored Kubernetes schemas
  python3-yaml python3-jsonschema
  # GUI screenshots, report rendering, packaging checks, load tests
  xvfb xauth x11-apps imagemagick poppler-utils appstream desktop-file-utils
  dpkg-dev file wrk curl
  # the .deb: manual pages from --help, lintian, the completion's test, and
  # the clean Debian 12 root check-deb.sh installs it into
  help2man lintian bash-completion man-db debootstrap
)

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exec "$(dirname "$0")/install-torch.sh"
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
exec "$(dirname "$0")/install-torch.sh"
