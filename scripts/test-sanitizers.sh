#!/usr/bin/env bash
# Builds the engine without CUDA or the app under ASan+UBSan and runs the tests labelled
# "parsers" (every file format, tokenizer and template parser, with the malformed corpus).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHEARTH_CUDA=OFF -DHEARTH_APP=OFF \
  -DHEARTH_SANITIZE=address,undefined
# Only the parser tests run here, so only they (and the engine) are built.
mapfile -t targets < <(ctest --test-dir build-asan -N -L parsers | sed -n 's/^ *Test *#[0-9]*: //p')
cmake --build build-asan --parallel "$(nproc)" --target "${targets[@]}"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -L parsers -j "$(nproc)"
