#!/usr/bin/env bash
# The engine's logits stay bit-identical: every tiny family's fingerprint (logits_fingerprint.sh,
# scalar and AVX2 kernels forced, so the same bits on any x86-64 host with AVX2) against the
# committed logits_fingerprints.txt. A change that alters them on purpose regenerates the file
#   src/model/engine/reference/logits_fingerprint.sh build/tools/moex /tmp/fp scalar avx2 \
#     > src/model/engine/reference/logits_fingerprints.txt
# and says in its commit why the logits changed.
#   logits_fingerprint_test.sh MOEX WORKDIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$2"
got="$("$here/logits_fingerprint.sh" "$1" "$2" scalar avx2)"
if ! diff <(sort "$here/logits_fingerprints.txt") <(echo "$got" | sort); then
  echo "logits fingerprint: the logits above differ from logits_fingerprints.txt (< committed, > now)" >&2
  exit 1
fi
echo "logits fingerprint: $(echo "$got" | wc -l) preset x ISA runs bit-identical to the committed fingerprints"
