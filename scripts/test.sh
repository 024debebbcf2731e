#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds Hearth and runs every test: the main build, the
# Debian package (built, unpacked and run without the CUDA toolkit), then the file parsers again
# under AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
stage() { echo "== $(date -u +%H:%M:%S) $*"; }
stage "set-up"
./scripts/setup.sh
# The Python packages the tests drive Hearth with (the OpenAI client for the server's tests).
python3 -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt ||
  python3 -m pip install --quiet --disable-pip-version-check --user --break-system-packages \
    -r tests/requirements.txt
stage "build"
./scripts/build.sh
stage "tests"
ctest --test-dir build --output-on-failure --timeout 1200 -j "$(nproc)"
stage "package"
# The Debian package as a user's machine meets it (packaging/check-package.sh); gzip instead of
# the release's xz keeps this stage short. Installed and purged where this runs as root.
package_args=()
[ "$(id -u)" -eq 0 ] && package_args+=(--install)
HEARTH_PACKAGE_COMPRESSION=gzip ./packaging/check-package.sh "${package_args[@]}"
rm -rf build/hearth_*.deb build/hearth-dbgsym_*.ddeb build/_CPack_Packages  # 1.5 GB
stage "sanitizer build and parser tests"
./scripts/test-sanitizers.sh
stage "done"
echo "all tests passed"
