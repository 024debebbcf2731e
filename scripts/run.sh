#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds Hearth and starts it with the default model:
# the desktop app when a display is available, otherwise a chat in the terminal.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
model="${XDG_DATA_HOME:-$HOME/.local/share}/hearth/models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ -x build/app/desktop/hearth ] && [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec build/app/desktop/hearth --model "$model" "$@"
fi
echo "No display found: starting the terminal chat (hearth-cli chat)."
exec build/app/cli/hearth-cli chat --model "$model" "$@"
