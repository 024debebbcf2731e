#!/usr/bin/env bash
# Configures and builds Hearth into build/ (or $HEARTH_BUILD_DIR). CUDA code is compiled when
# nvcc exists, for $HEARTH_CUDA_ARCHS (default: 90, the H100/H200; CI builds one architecture).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${HEARTH_BUILD_DIR:-build}"
args=(-S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${HEARTH_BUILD_TYPE:-RelWithDebInfo}")
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="$PATH:/usr/local/cuda/bin"
  args+=(-DHEARTH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${HEARTH_CUDA_ARCHS:-90}")
else
  args+=(-DHEARTH_CUDA=OFF)
fi
cmake "${args[@]}" "$@"
cmake --build "$build_dir" --parallel "$(nproc)"
