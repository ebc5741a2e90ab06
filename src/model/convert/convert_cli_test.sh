#!/usr/bin/env bash
# `moex convert` on bad input: exit code 2 and a message naming what is wrong, never a crash,
# and no output directory left behind; then one good conversion of a float checkpoint that
# `moex generate` runs, and a second conversion to the same --out refused.
# Usage: convert_cli_test.sh MOEX_EXE
set -u
moex="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fails=0

# expect NAME PATTERN -- ARGS...: exit code 2, stderr matching PATTERN, no --out directory.
expect() {
  local name="$1" pattern="$2"
  shift 3
  local out="$work/out-$name"
  "$moex" convert "$@" --out "$out" --quiet >"$work/stdout" 2>"$work/stderr"
  local rc=$?
  if [ $rc -ne 2 ] || ! grep -qE -- "$pattern" "$work/stderr" || [ -e "$out" ] ||
     compgen -G "$out.tmp-*" >/dev/null; then
    echo "FAIL $name: rc=$rc, stderr: $(head -c 400 "$work/stderr")"
    fails=$((fails + 1))
  else
    echo "ok   $name: $(head -c 160 "$work/stderr" | tr '\n' ' ')"
  fi
}

"$moex" make-model --preset tiny-qwen3-moe --bits 0 --dtype f32 --out "$work/good" >/dev/null 2>&1 ||
  { echo "FAIL: make-model"; exit 1; }
mkdir "$work/empty"
cp -r "$work/good" "$work/noweights" && rm "$work/noweights/"*.safetensors*
cp -r "$work/good" "$work/nocfg" && rm "$work/nocfg/config.json"
cp -r "$work/good" "$work/family" && sed -i 's/"model_type": *"qwen3_moe"/"model_type": "frobnicate"/' "$work/family/config.json"
cp -r "$work/good" "$work/shape" && sed -i 's/"hidden_size": *256/"hidden_size": 320/' "$work/shape/config.json"
cp -r "$work/good" "$work/badjson" && printf '{"model_type": ' > "$work/badjson/config.json"
"$moex" make-model --preset tiny-qwen3-moe --bits 4 --out "$work/quantized" >/dev/null 2>&1
# A checkpoint whose one tensor is I32 (a dtype convert cannot cast): the safetensors header
# (padded to 8 bytes) after its little-endian 8-byte length, then 4 data bytes.
mkdir "$work/int" && cp "$work/good/config.json" "$work/int/"
hdr='{"model.embed_tokens.weight":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}}'
while [ $(( ${#hdr} % 8 )) -ne 0 ]; do hdr="$hdr "; done
{ printf "$(printf '\\x%02x' $(( ${#hdr} & 255 )) $(( ${#hdr} >> 8 )) 0 0 0 0 0 0)"
  printf '%s' "$hdr"; printf '\x01\x00\x00\x00'; } >"$work/int/model.safetensors"

expect missing-dir   "not a directory"                 -- "$work/nonexistent"
expect no-config     "has no config.json"              -- "$work/nocfg"
expect empty-dir     "has no config.json"              -- "$work/empty"
expect no-weights    "safetensors"                     -- "$work/noweights"
expect bad-json      "config.json"                     -- "$work/badjson"
expect unknown-family "frobnicate"                     -- "$work/family"
expect shape         "hidden_size|expected|shape"      -- "$work/shape"
expect quantized     "already MLX-quantized|U32"       -- "$work/quantized"
expect int-tensor    "model.embed_tokens.weight' is I32" -- "$work/int"
expect dtype         "--dtype must be"                 -- "$work/good" --dtype int8
expect q-mode        "--q-mode must be"                -- "$work/good" -q --q-mode int4
expect q-bits        "--q-bits must be"                -- "$work/good" -q --q-bits 7
expect q-group       "--q-group-size must be"          -- "$work/good" -q --q-group-size 48
expect fp-bits       "mxfp4 has bits 4"                -- "$work/good" -q --q-mode mxfp4 --q-bits 8
expect recipe        "mixed_2_6, mixed_3_4"            -- "$work/good" -q --quant-predicate mixed_9_9
expect recipe-fp     "affine only"                     -- "$work/good" -q --q-mode nvfp4 --quant-predicate mixed_3_6
expect no-q          "need -q"                         -- "$work/good" --q-bits 8

# A good conversion, run by moex; converting again into the same --out is refused.
if "$moex" convert "$work/good" --out "$work/conv" -q 2>"$work/stderr" &&
   grep -q "convert: wrote" "$work/stderr" && [ -f "$work/conv/model.safetensors.index.json" ] &&
   "$moex" generate -m "$work/conv" --prompt-ids 3,14,15 -n 2 --ignore-eos >/dev/null 2>&1; then
  echo "ok   convert + generate"
else
  echo "FAIL convert + generate: $(tail -c 400 "$work/stderr")"
  fails=$((fails + 1))
fi
"$moex" convert "$work/good" --out "$work/conv" --quiet 2>"$work/stderr"
if [ $? -eq 2 ] && grep -q "already exists" "$work/stderr"; then echo "ok   out-exists (converted)"; else
  echo "FAIL out-exists (converted)"; fails=$((fails + 1)); fi
# --out with a trailing slash names the same directory (its temporary sits beside it).
if "$moex" convert "$work/good" --out "$work/slash/" --quiet 2>"$work/stderr" &&
   [ -f "$work/slash/model.safetensors" ] && ! compgen -G "$work/slash/.tmp-*" >/dev/null; then
  echo "ok   out with a trailing slash"
else
  echo "FAIL out with a trailing slash: $(tail -c 300 "$work/stderr")"; fails=$((fails + 1))
fi
[ $fails -eq 0 ] && echo "convert_cli_test: all passed" || echo "convert_cli_test: $fails failed"
[ $fails -eq 0 ]
