#!/usr/bin/env bash
# Builds every libFuzzer target (tests/fuzz/fuzz_*.cpp) with clang, ASan and UBSan into
# build-fuzz, then runs each for a while on its corpus.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     SECONDS per target (default 60); default: all
#
# Per target fuzz_<name>: dictionary tests/fuzz/<name>.dict when it exists; seeds from
# tests/fuzz/make_seeds.py (engine/io targets) and from the paths listed in tests/fuzz/<name>.seeds
# (one glob per line, relative to the repository root). The growing corpus lives in
# build-fuzz/fuzz-corpus/<target>, crashes in build-fuzz/fuzz-artifacts. Options as docs/TESTING.md
# ("Fuzz targets") asks: -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
[[ $# -gt 0 ]] && shift
build=build-fuzz

CC=${CC:-clang-14} CXX=${CXX:-clang++-14} cmake -S . -B "$build" -G Ninja \
  -DHEARTH_FUZZ=ON -DHEARTH_CUDA=OFF -DHEARTH_APP=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if [[ $# -gt 0 ]]; then
  targets=("$@")
else
  targets=()
  for src in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
fi
cmake --build "$build" --target "${targets[@]}"

seeds="$build/fuzz-seeds"
python3 tests/fuzz/make_seeds.py "$seeds" >/dev/null

status=0
for target in "${targets[@]}"; do
  name=${target#fuzz_}
  corpus="$build/fuzz-corpus/$target"
  artifacts="$build/fuzz-artifacts/$target"
  mkdir -p "$corpus" "$artifacts" "$seeds/$target"
  if [[ -f "tests/fuzz/$name.seeds" ]]; then
    while IFS= read -r pattern; do
      [[ -z "$pattern" || "$pattern" == \#* ]] && continue
      for f in $pattern; do [[ -f "$f" ]] && cp "$f" "$seeds/$target/"; done
    done <"tests/fuzz/$name.seeds"
  fi
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024
        -print_final_stats=1 -artifact_prefix="$artifacts/")
  [[ -f "tests/fuzz/$name.dict" ]] && args+=(-dict="tests/fuzz/$name.dict")
  echo "=== $target: ${seconds}s"
  if ! "$build/tests/fuzz/$target" "${args[@]}" "$corpus" "$seeds/$target" 2>"$build/$target.log"; then
    echo "!!! $target found a problem; see $build/$target.log and $artifacts" >&2
    status=1
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+ *DONE" "$build/$target.log" || true
done
exit $status
