#!/usr/bin/env bash
# Fetches xgrammar's C++ core (the grammar engine of structured output) from its source
# distribution on the Python index: pinned version, sha256-checked, unpacked into .cache.
#   scripts/fetch_xgrammar.sh      # prints the source directory CMake's MOEX_XGRAMMAR_DIR takes
# Idempotent. Only the C++ core is unpacked: cpp/ (less the tvm_ffi bindings), include/, and
# the two headers it includes from 3rdparty (dlpack: Apache-2.0, picojson: BSD-2-Clause, in its header).
# xgrammar itself is Apache-2.0 (its LICENSE and NOTICE are kept beside the sources).
set -euo pipefail
cd "$(dirname "$0")/.."

XGRAMMAR_VERSION=0.2.9
XGRAMMAR_SHA256=87b466bca2475e29bb0323abc62c6c33cbcbcff47e5fb800a3e2099ac9620b90

say() { echo "fetch_xgrammar: $*" >&2; }
pip="${MOEX_PIP:-.venv/bin/pip}"
dest=.cache/xgrammar
top="$dest/xgrammar-$XGRAMMAR_VERSION"
stamp="$top/.moex-fetched"
# Fixes applied to the sources, each saying why (scripts/patches/xgrammar-$XGRAMMAR_VERSION-*).
patches=(scripts/patches/xgrammar-$XGRAMMAR_VERSION-*.patch)
stamp_text() { echo "$XGRAMMAR_SHA256 $(cat "${patches[@]}" | sha256sum | cut -c1-16)"; }
if [[ -f "$stamp" && "$(cat "$stamp")" == "$(stamp_text)" ]]; then
  echo "$PWD/$top"
  exit 0
fi
[[ -x "$pip" ]] || { say "no pip at $pip (scripts/setup.sh makes .venv; or set MOEX_PIP)"; exit 2; }
mkdir -p "$dest"
sdist="$dest/xgrammar-$XGRAMMAR_VERSION.tar.gz"
if [[ ! -f "$sdist" ]]; then
  say "downloading xgrammar==$XGRAMMAR_VERSION (source distribution)"
  # --no-binary for xgrammar alone: its build requirements (used by pip to read the metadata)
  # may come as wheels; nothing of them is kept.
  "$pip" download -q --no-deps --no-binary xgrammar "xgrammar==$XGRAMMAR_VERSION" -d "$dest" >&2
fi
got=$(sha256sum "$sdist" | cut -d' ' -f1)
if [[ "$got" != "$XGRAMMAR_SHA256" ]]; then
  say "checksum mismatch for $sdist: got $got, the pin says $XGRAMMAR_SHA256"
  rm -f "$sdist"
  exit 4
fi
rm -rf "$top"
p="xgrammar-$XGRAMMAR_VERSION"
tar -xzf "$sdist" -C "$dest" "$p/cpp" "$p/include" "$p/LICENSE" "$p/NOTICE" \
  "$p/3rdparty/dlpack/include" "$p/3rdparty/dlpack/LICENSE" \
  "$p/3rdparty/picojson/picojson.h"
rm -rf "$top/cpp/tvm_ffi"
for p in "${patches[@]}"; do
  patch -s -p1 -d "$top" < "$p" || { say "$p does not apply"; exit 5; }
done
stamp_text > "$stamp"
say "xgrammar $XGRAMMAR_VERSION C++ core in $top"
echo "$PWD/$top"
