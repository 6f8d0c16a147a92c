#!/usr/bin/env bash
# Installs the libtorch BatchPilot builds against: the `torch` wheel from PyPI,
# pinned to one version, unpacked (not pip-installed) into a cache folder that
# CMake finds (cmake/find_torch.cmake). Called by install-deps.sh.
#
# Why the wheel: Debian 12's libtorch-dev is 1.13 (2022) and CPU-only. PyPI's
# torch for Linux x86-64 is a CUDA build (2.11.0: CUDA 13.0), so one download
# gives a libtorch that runs on the CPU everywhere and on an NVIDIA GPU where
# there is one. 2.11.0 is the version the H200 machine this project measures
# on has (docs/gpu.md).
#
# What it fetches (pip download --no-deps: nothing else is resolved):
#   torch 2.11.0                         530 MB, sha256-pinned below
#   CUDA runtime libraries the wheel links and a CUDA 13 toolkit may lack:
#     nvidia-cusparselt-cu13 0.8.0      170 MB
#     nvidia-nvshmem-cu13 3.4.5          60 MB
#     nvidia-cufile 1.15.1.6              1 MB
#   the pure-Python packages `import torch` needs (9 MB), so that a plain
#   python3 can make the TorchScript test fixtures with the same torch
# The rest of CUDA 13 (cudart, cuBLAS, cuDNN, NCCL, ...) comes from the
# system's CUDA toolkit 13.0 (/usr/local/cuda, nvcc on PATH): CMake needs the
# toolkit to configure against a CUDA libtorch, and our own CUDA kernels are
# compiled with its nvcc. Without one this script stops and says so.
#
# Idempotent: when the folder is complete it checks a stamp and exits.
#   BATCHPILOT_TORCH_HOME  where to unpack (default ~/.cache/batchpilot/torch-2.11.0)
set -euo pipefail

TORCH_VERSION=2.11.0
TORCH_SHA256=7aa2f9bbc6d4595ba72138026b2074be1233186150e9292865e04b7a63b8c67a
# name==version sha256, for the libraries a system CUDA toolkit lacks
EXTRA_WHEELS=(
  "nvidia-cusparselt-cu13==0.8.0 25e30a8a7323935d4ad0340b95a0b69926eee755767e8e0b1cf8dd85b197d3fd"
  "nvidia-nvshmem-cu13==3.4.5 290f0a2ee94c9f3687a02502f3b9299a9f9fe826e6d0287ee18482e78d495b80"
  "nvidia-cufile==1.15.1.6 08a3ecefae5a01c7f5117351c64f17c7c62efa5fffdbe24fc7d298da19cd0b44"
  # what `import torch` needs, for the Python that makes the TorchScript test
  # fixtures (tools/make_torchscript_fixture.py; PYTHONPATH=site, python3 -S)
  "typing_extensions==4.15.0 f0fa19c6845758ab08074a0cfa8b7aecb71c999ca73d62883bc25cc018c4e548"
  "filelock==3.20.0 339b4732ffda5cd79b13f4e2711a31b0365ce445d95d243bb996273d072546a2"
  "sympy==1.14.0 e091cc3e99d2141a0ba2847328f5479b05d94a6635cb96148ccb3f34671bd8f5"
  "mpmath==1.3.0 a0b2b9fe80bbcd81a6647ff13108738cfb482d481d826cc0e02f5b35e5c88d2c"
  "networkx==3.5 0030d386a9a06dee3565298b4a734b68589749a544acbb6c412dc9e2489ec6ec"
  "jinja2==3.1.6 85ece4451f492d0c13c5dd7c13a64681a86afae63a5f347908daf103ce6d2f67"
  "markupsafe==3.0.3 0bf2a864d67e76e5c9a34dc26ec616a66b9888e25e7b9460e1c76d3293bd9dbf"
  "fsspec==2025.9.0 530dc2a2af60a414a832059574df4a6e10cce927f6f4a78209390fe38955cfb7"
)
HOME_DIR=${BATCHPILOT_TORCH_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/batchpilot/torch-$TORCH_VERSION}
STAMP="$HOME_DIR/.complete"
want_stamp="torch $TORCH_VERSION $TORCH_SHA256 ${#EXTRA_WHEELS[@]}"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want_stamp" ]]; then
  echo "install-torch: torch $TORCH_VERSION present in $HOME_DIR"
  exit 0
fi

die() { echo "install-torch: $*" >&2; exit 1; }

command -v unzip >/dev/null || die "unzip is missing (install-deps.sh installs it)"
python3 -m pip --version >/dev/null 2>&1 || die "pip is missing: install python3-pip"
if ! command -v nvcc >/dev/null; then
  [[ -x /usr/local/cuda/bin/nvcc ]] || die "no CUDA toolkit: PyPI's torch is a CUDA 13.0 build, and CMake \
needs the CUDA 13.0 toolkit (nvcc and its libraries) to configure against it. Install NVIDIA's \
cuda-toolkit-13-0 (https://developer.nvidia.com/cuda-downloads, Debian 12) and run this again."
fi
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cuda_version=$("$nvcc_bin" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
[[ "$cuda_version" == 13.0 ]] || die "nvcc is CUDA $cuda_version; torch $TORCH_VERSION from PyPI is built \
for CUDA 13.0 and CMake refuses a toolkit of another version. Put CUDA 13.0's nvcc first on PATH."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fetch() { # fetch NAME==VERSION SHA256: downloads one wheel into $tmp and checks its digest
  local spec=$1 sha=$2 before after file
  before=$(ls "$tmp")
  python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 \
    --python-version 3.11 --implementation cp --dest "$tmp" "$spec" ||
    die "could not download $spec from PyPI"
  after=$(ls "$tmp")
  file=$(comm -13 <(echo "$before") <(echo "$after") | head -1)
  [[ -n "$file" ]] || die "pip downloaded nothing for $spec"
  echo "$sha  $tmp/$file" | sha256sum --quiet -c - || die "$file does not match its pinned sha256"
  echo "$tmp/$file"
}

echo "install-torch: downloading torch $TORCH_VERSION (530 MB) 3 CUDA libraries (230 MB) and 8 Python packages (9 MB) from PyPI"
start=$(date +%s)
wheels=("$(fetch "torch==$TORCH_VERSION" "$TORCH_SHA256")")
for entry in "${EXTRA_WHEELS[@]}"; do
  wheels+=("$(fetch ${entry% *} ${entry#* })")
done

rm -rf "$HOME_DIR"
mkdir -p "$HOME_DIR/site"
for w in "${wheels[@]}"; do
  unzip -q -o "$w" -d "$HOME_DIR/site"
done
# The wheel's libraries find each other through RPATH $ORIGIN/../../nvidia/*/lib
# (site/nvidia/...); cudart, cuBLAS, cuDNN and NCCL come from the toolkit
# through the dynamic linker's cache. Check that they resolve now, not at the
# first test.
missing=$(LD_LIBRARY_PATH= ldd "$HOME_DIR/site/torch/lib/libtorch_cuda.so" | awk '/not found/ {print $1}' | sort -u)
[[ -z "$missing" ]] || die "libtorch_cuda.so needs libraries that are not installed: $(echo $missing). \
Install the CUDA 13.0 toolkit's libraries (cuDNN and NCCL included) or add their folder to /etc/ld.so.conf.d."
echo "$want_stamp" >"$STAMP"
echo "install-torch: torch $TORCH_VERSION in $HOME_DIR ($(du -sh "$HOME_DIR" | cut -f1), $(($(date +%s) - start)) s)"
