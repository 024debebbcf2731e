#!/usr/bin/env bash
# Cross-compiles tests/cross/neon_dot_test.cpp with the NEON and portable quantized dot-product
# kernels for AArch64 and runs it under qemu, so that x86 hosts test the NEON kernel too.
# Usage: run_neon_dot_test.sh [BUILD_DIR]  (default: a temporary folder, removed afterwards).
# Skips (exit 0, "skipped: no aarch64 toolchain") where the cross compiler, qemu or doctest is
# missing: scripts/setup.sh installs them.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cxx="${HEARTH_AARCH64_CXX:-aarch64-linux-gnu-g++}"
qemu="${HEARTH_QEMU_AARCH64:-qemu-aarch64}"
sysroot="${HEARTH_AARCH64_SYSROOT:-/usr/aarch64-linux-gnu}"

for tool in "$cxx" "$qemu"; do
  if ! command -v "$tool" >/dev/null; then
    echo "skipped: no aarch64 toolchain ($tool not found)"
    exit 0
  fi
done
if [ ! -f /usr/include/doctest/doctest.h ]; then
  echo "skipped: no aarch64 toolchain (doctest-dev missing)"
  exit 0
fi

if [ $# -ge 1 ]; then
  out="$1"
  mkdir -p "$out"
else
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi

# doctest's header is target-neutral, but the host's /usr/include must not reach the cross
# compiler: the header alone goes into the build folder.
mkdir -p "$out/include/doctest"
cp /usr/include/doctest/doctest.h "$out/include/doctest/"
# The kernels, the dispatch (with the NEON kernel built in, as engine/backend/cpu/CMakeLists.txt
# does on AArch64) and the error helpers it throws through.
"$cxx" -O2 -std=c++20 -Wall -Wextra -Wno-unused-parameter -DHEARTH_QUANT_DOT_NEON=1 \
  -I"$root" -isystem "$out/include" \
  -o "$out/neon_dot_test" \
  "$root/tests/cross/neon_dot_test.cpp" \
  "$root/engine/backend/cpu/quant_dot_neon.cpp" \
  "$root/engine/backend/cpu/quant_dot.cpp" \
  "$root/engine/core/error.cpp"
"$qemu" -L "$sysroot" "$out/neon_dot_test"
