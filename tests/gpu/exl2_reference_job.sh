#!/usr/bin/env bash
# The EXL2 reference job: everything issue 4 needs from exllamav2 0.3.2 and a GPU, in stages.
#
#   tests/gpu/exl2_reference_job.sh WHEEL GGUF [STAGES]
#
# WHEEL: exllamav2-0.3.2-py3-none-any.whl (pure Python + extension sources; JIT-compiled here).
# GGUF:  SmolLM2-135M-Instruct.Q4_1.gguf, or a folder holding it, or a folder holding it split
#        in parts (*.gguf.part1, *.gguf.part2, ...: see "prepare-carry" below), or an fp16
#        safetensors folder of the model (config.json + model.safetensors + tokenizer files).
# STAGES (comma list; default setup,fixtures,convert,quantize,reference,build,hearth):
#   setup      unpack the wheel, JIT-compile exllamav2's extension (cached in $WORK)
#   fixtures   per-layer EXL2 fixtures by exllamav2's quantizer + packer
#              (tests/reference/exl2_make_fixtures.py), and exllamav2's GPTQ reading of the
#              committed GPTQ fixtures (gptq_crosscheck.json)
#   convert    GGUF -> fp16 safetensors folder (tests/reference/exl2_smollm2_reference.py)
#   quantize   exllamav2's converter: one measurement, then 2.5, 4.0 and 6.0 bpw
#   reference  exllamav2's logits and greedy continuations on 10 prompts, per bpw
#   build      build Hearth with CUDA (tests/gpu/run.sh's configure, then the quant targets)
#   hearth     run quant_tests (now with the exllamav2 fixtures), quant_parser_tests,
#              quant_gpu_tests and quant_exl2_smollm2_tests (Hearth on the exllamav2
#              checkpoints, CPU and GPU backends, against exllamav2's logits); builds if needed
#   bench      quant_bench: synthetic EXL2/GPTQ models of Llama shapes (decode at batch 1, 8, 32
#              with the share of the bandwidth limit, prefill), and the kernel sweep
# Every call ends by packing what exists into $OUT: summary.txt and exl2_results.tar.gz
# (fixtures/exl2_exllamav2/, smollm2/exl2_smollm2_*.json, logs/, bench/).
#
# Variables: WORK (default build-exl2-job, kept between calls on a warm machine), OUT (default
# $WORK/out), HEARTH_EXL2_CAL_LENGTH (calibration row length, default 2048), HEARTH_GPU_BUILD
# (Hearth build folder, default build-gpu), HEARTH_EXL2_BENCH_ARGS (extra quant_bench runs).
#
# Special first argument, on the development machine (no GPU):
#   tests/gpu/exl2_reference_job.sh prepare-carry WHEEL GGUF [DIR]
# writes DIR (default build-exl2-carry) /part1 (the wheel, gguf-py, the GGUF's first half) and
# /part2 (its second half): the GGUF alone is larger than what one device call carries, so the
# first call carries part1 and runs "setup" (minutes of compiling), the next call, right after
# (the machine keeps part1 while warm), carries part2 and runs the rest.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

if [ "${1:-}" = prepare-carry ]; then
  WHEEL=${2:?wheel}; GGUF=${3:?gguf}; DIR=${4:-build-exl2-carry}
  rm -rf "$DIR" && mkdir -p "$DIR/part1" "$DIR/part2"
  cp "$WHEEL" "$DIR/part1/"
  python3 - "$DIR/part1/gguf_py" <<'EOF'
import os, shutil, sys, gguf
shutil.copytree(os.path.dirname(gguf.__file__), os.path.join(sys.argv[1], "gguf"))
EOF
  size=$(stat -c %s "$GGUF")
  half=$(( (size / 2 / 1048576 + 1) * 1048576 ))
  name=$(basename "$GGUF")
  head -c "$half" "$GGUF" > "$DIR/part1/$name.part1"
  tail -c +$((half + 1)) "$GGUF" > "$DIR/part2/$name.part2"
  sha256sum "$GGUF" | awk '{print $1}' > "$DIR/part2/$name.sha256"
  du -sh "$DIR"/part1 "$DIR"/part2
  echo "carry $DIR/part1 with the setup call, $DIR/part2 with the next; GGUF argument: $DIR"
  exit 0
fi

WHEEL=${1:?usage: exl2_reference_job.sh WHEEL GGUF [STAGES]}
GGUF=${2:?usage: exl2_reference_job.sh WHEEL GGUF [STAGES]}
STAGES=${3:-setup,fixtures,convert,quantize,reference,build,hearth}
WORK=${WORK:-$ROOT/build-exl2-job}
OUT=${OUT:-$WORK/out}
BUILD=${HEARTH_GPU_BUILD:-build-gpu}
mkdir -p "$WORK/logs" "$WORK/bench" "$OUT"
SUMMARY="$WORK/logs/summary.txt"
say() { echo "$*" | tee -a "$SUMMARY"; }
has() { [[ ",$STAGES," == *",$1,"* ]]; }
export PATH="/usr/local/cuda/bin:$PATH"
export PYTHONPATH="$WORK/py:$WORK/py/gguf_py${PYTHONPATH:+:$PYTHONPATH}"
export TORCH_EXTENSIONS_DIR="$WORK/torch_extensions"
export MAX_JOBS=${MAX_JOBS:-$(nproc)}
PY=python3
status=0

pack() {
  mkdir -p "$WORK/pack/fixtures" "$WORK/pack/smollm2"
  rm -rf "$WORK/pack/fixtures/"* "$WORK/pack/smollm2/"*
  [ -d "$WORK/fixtures/exl2_exllamav2" ] && cp -r "$WORK/fixtures/exl2_exllamav2" "$WORK/pack/fixtures/"
  cp "$WORK"/smollm2-exl2/exl2_smollm2_*.json "$WORK/pack/smollm2/" 2>/dev/null
  for d in 2.5 4.0 6.0; do
    [ -f "$WORK/smollm2-exl2/$d/config.json" ] && cp "$WORK/smollm2-exl2/$d/config.json" "$WORK/pack/smollm2/config_$d.json"
  done
  rm -rf "$WORK/pack/logs" "$WORK/pack/bench"
  cp -r "$WORK/logs" "$WORK/bench" "$WORK/pack/"
  tar czf "$OUT/exl2_results.tar.gz" -C "$WORK/pack" .
  cp "$SUMMARY" "$OUT/summary.txt"
  echo "packed: $(du -h "$OUT/exl2_results.tar.gz" | cut -f1) in $OUT"
}
trap pack EXIT

say "== exl2_reference_job $(date -u +%FT%TZ): stages $STAGES"
command -v nvidia-smi >/dev/null && say "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)"

# The wheel unpacked once; gguf-py from the carry if the image has none.
if [ ! -d "$WORK/py/exllamav2" ]; then
  [ -f "$WHEEL" ] || { say "!! wheel not found: $WHEEL"; exit 1; }
  mkdir -p "$WORK/py" && $PY -m zipfile -e "$WHEEL" "$WORK/py" || { say "!! cannot unpack $WHEEL"; exit 1; }
fi
for g in "$(dirname "$WHEEL")/gguf_py" "$(dirname "$GGUF")/gguf_py" "$GGUF/gguf_py"; do
  if [ -d "$g/gguf" ] && [ ! -d "$WORK/py/gguf_py/gguf" ]; then mkdir -p "$WORK/py/gguf_py" && cp -r "$g/gguf" "$WORK/py/gguf_py/"; fi
done
$PY - <<'EOF' | tee -a "$SUMMARY"
import importlib.util
mods = ["torch", "numpy", "safetensors", "transformers", "tokenizers", "gguf", "ninja", "pandas"]
print("python modules:", ", ".join(m + ("" if importlib.util.find_spec(m) else " (MISSING)") for m in mods))
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "device",
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "NONE")
EOF

if has setup; then
  start=$SECONDS
  # Compile for this GPU only (exllamav2 would otherwise build every arch torch knows).
  export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-$($PY -c "import torch; c=torch.cuda.get_device_capability(); print(f'{c[0]}.{c[1]}')")}
  if $PY -c "
import sys, types, importlib.util
for m in ('fastparquet', 'pandas'):
    if importlib.util.find_spec(m) is None: sys.modules[m] = types.ModuleType(m)
from exllamav2.ext import exllamav2_ext
print('exllamav2 extension ready')
" > "$WORK/logs/setup.log" 2>&1; then
    say "setup: ok ($((SECONDS - start)) s, arch $TORCH_CUDA_ARCH_LIST)"
  else
    say "setup: FAILED ($((SECONDS - start)) s)"; tail -30 "$WORK/logs/setup.log"; exit 1
  fi
fi

if has fixtures; then
  start=$SECONDS
  if $PY tests/reference/exl2_make_fixtures.py --out "$WORK/fixtures/exl2_exllamav2" > "$WORK/logs/fixtures.log" 2>&1; then
    say "fixtures: ok ($((SECONDS - start)) s): $(grep -c 'reconstruct == quantizer: True' "$WORK/logs/fixtures.log") of $(grep -c 'reconstruct == quantizer' "$WORK/logs/fixtures.log") layers reconstruct exactly as quantized"
    $PY - "$WORK/fixtures/exl2_exllamav2/gptq_crosscheck.json" <<'EOF' | tee -a "$SUMMARY"
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["cases"]:
    print("  gptq %-40s %s" % (c["name"], c.get("skipped") or c.get("error") or
          "%d of %d fp16 elements differ from exllamav2" % (c["mismatching_fp16_elements"], c["elements"])))
EOF
  else
    say "fixtures: FAILED"; tail -30 "$WORK/logs/fixtures.log"; status=1
  fi
fi

# The GGUF: a file, a folder with it, a folder with its parts, or an fp16 folder already. Parts
# seen by any call are kept in $WORK/carry, so part1 (setup call) and part2 (next call) meet.
mkdir -p "$WORK/carry"
if [ -d "$GGUF" ]; then
  find "$GGUF" -maxdepth 2 \( -name '*.gguf.part*' -o -name '*.gguf.sha256' \) -exec cp -n {} "$WORK/carry/" \;
fi
resolve_gguf() {
  if [ -f "$GGUF" ]; then echo "$GGUF"; return; fi
  local f
  f=$(ls "$GGUF"/*.gguf 2>/dev/null | head -1)
  if [ -n "$f" ]; then echo "$f"; return; fi
  f=$(ls "$WORK"/carry/*.gguf.part1 2>/dev/null | head -1)
  [ -z "$f" ] && return
  local name
  name=$(basename "$f" .part1)
  if [ ! -f "$WORK/carry/$name.part2" ]; then return; fi
  cat $(ls "$WORK"/carry/"$name".part* | sort -V) > "$WORK/$name"
  if [ -f "$WORK/carry/$name.sha256" ] &&
     [ "$(cat "$WORK/carry/$name.sha256")" != "$(sha256sum "$WORK/$name" | awk '{print $1}')" ]; then
    return
  fi
  echo "$WORK/$name"
}

if has convert; then
  start=$SECONDS
  if [ -f "$GGUF/config.json" ]; then
    mkdir -p "$WORK/smollm2-f16" && cp -r "$GGUF"/. "$WORK/smollm2-f16/"
    say "convert: using the fp16 folder $GGUF"
  else
    file=$(resolve_gguf)
    if [ -z "$file" ] || [ ! -s "$file" ]; then
      say "convert: FAILED: no GGUF at $GGUF, or a split one incomplete or damaged (carry part1 with the setup call and part2 with the next, while the machine is warm)"; exit 1
    fi
    if $PY tests/reference/exl2_smollm2_reference.py gguf-to-hf --gguf "$file" --out "$WORK/smollm2-f16" > "$WORK/logs/convert.log" 2>&1; then
      say "convert: ok ($((SECONDS - start)) s)"
    else
      say "convert: FAILED"; tail -30 "$WORK/logs/convert.log"; exit 1
    fi
  fi
fi

if has quantize; then
  start=$SECONDS
  if $PY tests/reference/exl2_smollm2_reference.py quantize --hf "$WORK/smollm2-f16" --work "$WORK/exl2-work" \
       --out "$WORK/smollm2-exl2" --bpw 2.5,4.0,6.0 --length "${HEARTH_EXL2_CAL_LENGTH:-2048}" > "$WORK/logs/quantize.log" 2>&1; then
    say "quantize: ok ($((SECONDS - start)) s): $(grep -h 'calibration perplexity (quant)' "$WORK/logs/quantize.log" | sed 's/.*: //' | tr '\n' ' ')"
  else
    say "quantize: FAILED ($((SECONDS - start)) s)"; tail -40 "$WORK/logs/quantize.log"; exit 1
  fi
fi

if has reference; then
  start=$SECONDS
  if $PY tests/reference/exl2_smollm2_reference.py reference --models "$WORK/smollm2-exl2" --out "$WORK/smollm2-exl2" \
       > "$WORK/logs/reference.log" 2>&1; then
    say "reference: ok ($((SECONDS - start)) s): $(ls "$WORK"/smollm2-exl2/*.json | xargs -n1 basename | tr '\n' ' ')"
  else
    say "reference: FAILED"; tail -30 "$WORK/logs/reference.log"; exit 1
  fi
fi

if has build || { has hearth && [ ! -x "$BUILD/tests/gpu/quant_exl2_smollm2_tests" ]; }; then
  start=$SECONDS
  # Configure and build through tests/gpu/run.sh (it finds or builds GoogleTest), then ours.
  if HEARTH_GPU_STAGES=build HEARTH_GPU_BUILD="$BUILD" OUT="$WORK/logs/gpu-build" tests/gpu/run.sh > /dev/null 2>&1 &&
     cmake --build "$BUILD" -j "$(nproc)" --target quant_tests quant_parser_tests quant_gpu_tests \
       quant_exl2_smollm2_tests quant_bench > "$WORK/logs/build.log" 2>&1; then
    say "hearth build: ok ($((SECONDS - start)) s, $(grep -c 'warning' "$WORK/logs/build.log") warnings)"
  else
    say "hearth build: FAILED"; tail -30 "$WORK/logs/build.log" "$WORK/logs/gpu-build/build.log" 2>/dev/null; exit 1
  fi
fi

if has hearth; then
  # The exllamav2 fixtures join the committed ones for this run's quant_tests.
  if [ -d "$WORK/fixtures/exl2_exllamav2" ]; then
    rm -rf tests/fixtures/quant/exl2_exllamav2 && cp -r "$WORK/fixtures/exl2_exllamav2" tests/fixtures/quant/
  fi
  run_test() {
    local name=$1; shift
    local t0=$SECONDS
    if timeout 900 "$@" --gtest_color=no > "$WORK/logs/$name.log" 2>&1; then
      say "$name: ok ($((SECONDS - t0)) s): $(grep -c '^\[       OK \]' "$WORK/logs/$name.log") passed, $(grep -c '^\[  SKIPPED \] [A-Z]' "$WORK/logs/$name.log") skipped"
    else
      status=1
      say "$name: FAILED ($((SECONDS - t0)) s)"; grep -E '^\[  FAILED  \] [A-Z]|Failure' "$WORK/logs/$name.log" | head -20 | tee -a "$SUMMARY"
    fi
  }
  run_test quant_tests "$BUILD/tests/unit/quant/quant_tests"
  run_test quant_parser_tests "$BUILD/tests/unit/quant/quant_parser_tests"
  run_test quant_gpu_tests "$BUILD/tests/gpu/quant_gpu_tests"
  HEARTH_EXL2_SMOLLM2="$WORK/smollm2-exl2" run_test quant_exl2_smollm2_tests "$BUILD/tests/gpu/quant_exl2_smollm2_tests"
  grep -E '^(cpu|cuda) [0-9.]+ bpw' "$WORK/logs/quant_exl2_smollm2_tests.log" | tee -a "$SUMMARY"
fi

if has bench; then
  start=$SECONDS
  B="$BUILD/tests/gpu/quant_bench"
  [ -x "$B" ] || { say "bench: quant_bench not built (run the hearth stage first)"; exit 1; }
  # Llama-3-8B at every width and GPTQ 4-bit g128 (with the kernel sweep), then the other shapes.
  timeout 540 "$B" --models llama3-8b --quants exl2:2.5,exl2:3.0,exl2:4.0,exl2:5.0,exl2:6.0,exl2:8.0,gptq:4:128 \
    --prefill 512,2048 --batches 1,8,32 --json-out "$WORK/bench/llama3-8b.json" > "$WORK/bench/llama3-8b.txt" 2>&1
  say "bench llama3-8b: rc $? ($((SECONDS - start)) s)"
  cat "$WORK/bench/llama3-8b.txt" | tee -a "$SUMMARY"
  if [ -n "${HEARTH_EXL2_BENCH_ARGS:-}" ]; then
    # shellcheck disable=SC2086
    timeout 540 "$B" $HEARTH_EXL2_BENCH_ARGS --json-out "$WORK/bench/extra.json" > "$WORK/bench/extra.txt" 2>&1
    say "bench extra ($HEARTH_EXL2_BENCH_ARGS): rc $?"; cat "$WORK/bench/extra.txt" | tee -a "$SUMMARY"
  fi
fi

say "== done: status $status"
exit $status
