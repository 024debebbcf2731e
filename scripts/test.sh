#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds Hearth and runs every test: the main build, then the
# file parsers again under AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 1200 -j "$(nproc)"
./scripts/test-sanitizers.sh
echo "all tests passed"
