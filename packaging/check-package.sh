#!/usr/bin/env bash
# Builds the Debian package from a build folder and checks it as a user's machine would meet it:
# lintian reports no errors, the .desktop entry validates, and the unpacked hearth-cli (info and a
# short generate on the default model) and hearth (a screenshot under Xvfb) run with the CUDA
# toolkit's folders hidden (a private mount namespace binding an empty folder over each), so that
# only what the package ships and declares is there. With --install (root) the package is also
# installed and purged, and nothing of it may remain.
#
#   packaging/check-package.sh [--build-dir DIR] [--backend cpu|cuda] [--no-app] [--no-lintian]
#                              [--install] [--keep]
#
# --backend cuda (on a GPU machine) generates on the GPU: the driver stays visible, the toolkit
# does not. HEARTH_PACKAGE_COMPRESSION (gzip, xz, zstd) overrides the package's compression for
# quicker checks. The package stays in the build folder; the unpacked tree is removed unless
# --keep.
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir="$PWD"
build_dir=build backend=cpu app=1 lintian=1 install=0 keep=0
while (($#)); do
  case "$1" in
    --build-dir) build_dir="$2"; shift ;;
    --backend) backend="$2"; shift ;;
    --no-app) app=0 ;;
    --no-lintian) lintian=0 ;;
    --install) install=1 ;;
    --keep) keep=1 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
model="${HEARTH_MODEL:-${XDG_DATA_HOME:-$HOME/.local/share}/hearth/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
[ -f "$model" ] || { echo "the default model is missing ($model): run scripts/setup.sh" >&2; exit 1; }
say() { echo "== $*"; }

# --- build the package --------------------------------------------------------------------
say "cpack in $build_dir"
rm -f "$build_dir"/hearth_*.deb "$build_dir"/hearth-dbgsym_*.ddeb
cpack_args=(-G DEB)
[ -n "${HEARTH_PACKAGE_COMPRESSION:-}" ] &&
  cpack_args+=(-D "CPACK_DEBIAN_COMPRESSION_TYPE=$HEARTH_PACKAGE_COMPRESSION")
# Without dpkg-dev (the GPU machines) the dependencies cannot be computed: the package is still
# built, to be run unpacked, but its Depends line is incomplete.
if ! command -v dpkg-shlibdeps >/dev/null; then
  echo "dpkg-shlibdeps is missing: Depends will not list the shared libraries"
  cpack_args+=(-D CPACK_DEBIAN_PACKAGE_SHLIBDEPS=OFF)
fi
start=$(date +%s)
(cd "$build_dir" && cpack "${cpack_args[@]}" >cpack.log) || { cat "$build_dir/cpack.log"; exit 1; }
deb=$(ls "$build_dir"/hearth_*.deb)
echo "built in $(($(date +%s) - start)) s:"
ls -l "$build_dir"/hearth_*.deb "$build_dir"/hearth-dbgsym_*.ddeb
dpkg-deb --field "$deb" Package Version Architecture Depends Recommends Installed-Size

# --- what the package declares ------------------------------------------------------------
if dpkg-deb --field "$deb" Depends | grep -q '/usr/local'; then
  echo "the package depends on something in /usr/local" >&2
  exit 1
fi
if ((lintian)); then
  say "lintian"
  lintian --fail-on error --suppress-tags no-manual-page "$deb"
fi

root=$(mktemp -d /tmp/hearth-package.XXXXXX)
cleanup() { ((keep)) || rm -rf "$root"; }
trap cleanup EXIT
dpkg-deb -x "$deb" "$root"
for f in "$root"/usr/bin/*; do
  if readelf -S "$f" | grep -q '\.debug_info'; then
    echo "$f carries debug information: the package's binaries must be stripped" >&2
    exit 1
  fi
done
if [ -f "$root/usr/share/applications/hearth.desktop" ]; then
  say "desktop-file-validate"
  desktop-file-validate "$root/usr/share/applications/hearth.desktop"
fi

# --- run it without the CUDA toolkit ------------------------------------------------------
# Every folder of a CUDA toolkit on this machine, bound over by an empty one.
hidden=()
for d in /usr/local/cuda /usr/local/cuda-*; do
  [ -d "$d" ] && hidden+=("$(readlink -f "$d")")
done
mapfile -t hidden < <(printf '%s\n' "${hidden[@]}" | sort -u)
empty="$root/.empty"
mkdir -p "$empty"
without_toolkit() {
  local binds=""
  for d in "${hidden[@]}"; do binds+="mount --bind '$empty' '$d' && "; done
  local ns=(unshare --mount --propagation private)
  [ "$(id -u)" -ne 0 ] && ns=(unshare --map-root-user --mount --propagation private)
  "${ns[@]}" bash -c "${binds} ! ls /usr/local/cuda*/lib*/libcudart.so* >/dev/null 2>&1 && exec \"\$@\"" \
    without-toolkit "$@"
}
say "toolkit folders hidden: ${hidden[*]:-none on this machine}"
for b in hearth-cli hearth; do
  [ -x "$root/usr/bin/$b" ] || continue
  if without_toolkit ldd "$root/usr/bin/$b" | grep 'not found'; then
    echo "$b needs a library the package does not declare" >&2
    exit 1
  fi
done
cli="$root/usr/bin/hearth-cli"
say "hearth-cli info"
without_toolkit "$cli" info --model "$model" --backend "$backend"
say "hearth-cli generate --backend $backend"
without_toolkit "$cli" generate --model "$model" --backend "$backend" --max-tokens 16 \
  --temperature 0 --prompt "The capital of France is"
if ((app)) && [ -x "$root/usr/bin/hearth" ]; then
  say "hearth under Xvfb"
  without_toolkit cmake -DAPP="$root/usr/bin/hearth" -DMODEL="$model" \
    -DPNG="$build_dir/package_screenshot.png" -DWORK="$root/screenshot_home" \
    -P "$source_dir/tests/app/screenshot_test.cmake"
fi

# --- install and purge --------------------------------------------------------------------
if ((install)); then
  say "install and purge"
  apt-get install -y -qq "$(readlink -f "$deb")" >/dev/null
  mapfile -t files < <(dpkg -L hearth | while read -r f; do [ -f "$f" ] && echo "$f"; done)
  hearth-cli info --model "$model" >/dev/null
  dpkg --purge hearth >/dev/null
  left=0
  for f in "${files[@]}"; do
    [ -e "$f" ] && { echo "left behind: $f" >&2; left=1; }
  done
  for d in /usr/lib/hearth /usr/lib/*/hearth /usr/share/doc/hearth; do
    [ -e "$d" ] && { echo "left behind: $d" >&2; left=1; }
  done
  ((left == 0)) || exit 1
  echo "installed ${#files[@]} files, all removed"
fi
say "package checks passed"
