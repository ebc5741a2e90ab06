#!/usr/bin/env bash
# Hostile input to the `moex` command, as a table: each row is a description, the exit code
# wanted (2: a clean error; never >= 128, a crash), a regex stderr must match (the flag, field,
# variable or file named) and a command, run under `timeout 20` so that a hang fails too.
# Then the output writers: a full disk or a kill during make-model leaves no directory under
# the final name, and a later --reuse rebuilds it. Usage: hostile_input_test.sh MOEX_EXE
set -u
moex="$1"
here="$(cd "$(dirname "$0")" && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0 rows=0

# row DESCRIPTION RC REGEX CMD...
row() {
  local desc="$1" want_rc="$2" want_re="$3"
  shift 3
  local err rc
  rows=$((rows + 1))
  err=$(timeout 20 "$@" 2>&1 >/dev/null </dev/null)
  rc=$?
  if [ "$rc" -ne "$want_rc" ] || ! grep -qE -- "$want_re" <<<"$err"; then
    echo "FAIL $desc: exit $rc (wanted $want_rc), stderr: $(head -c 300 <<<"$err")"
    echo "     wanted stderr matching /$want_re/; command: $*"
    fails=$((fails + 1))
  else
    echo "ok   $desc: $(head -1 <<<"$err" | head -c 150)"
  fi
}
check() {  # check DESCRIPTION SHELL-CONDITION
  if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}

"$moex" make-model --preset tiny-qwen3-moe --out "$work/good" -q >/dev/null 2>&1 ||
  { echo "make-model failed"; exit 1; }
variant() {  # variant NAME PYTHON-STATEMENTS-ON-j: a copy of good/ with config.json edited
  cp -r "$work/good" "$work/$1"
  python3 - "$work/$1/config.json" "$2" <<'PY'
import json, sys
p, code = sys.argv[1], sys.argv[2]
j = json.load(open(p))
exec(code)
json.dump(j, open(p, "w"))
PY
}
variant heads_huge 'j["num_attention_heads"] = 4 + 2**58'
variant layers_huge 'j["num_hidden_layers"] = 1000000000'
variant eos_huge 'j["eos_token_id"] = 4294967301'
variant max_pos_zero 'j["max_position_embeddings"] = 0'
variant max_pos_negative 'j["max_position_embeddings"] = -1'
variant short_context 'j["max_position_embeddings"] = 8'
cp -r "$work/good" "$work/fifo" && rm "$work/fifo/config.json" && mkfifo "$work/fifo/config.json"
cp -r "$work/good" "$work/zero" && ln -sf /dev/zero "$work/zero/config.json"
ln -s "$work/loop_b" "$work/loop_a" && ln -s "$work/loop_a" "$work/loop_b"
# A safetensors header length field 1-5 bytes short of the real header.
for k in 1 3 5; do
  cp -r "$work/good" "$work/short$k"
  python3 - "$work/short$k/model.safetensors" "$k" <<'PY'
import struct, sys
p, k = sys.argv[1], int(sys.argv[2])
with open(p, "r+b") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    f.seek(0)
    f.write(struct.pack("<Q", n - k))
PY
done
touch "$work/plain_file"
fake="$here/testdata_fake_bench_decode.sh"
mkdir -p "$work/narrow"
FAKE_COUNTER="$work/counter" FAKE_FAULT=none "$moex" sweep -m "$work/narrow" --repeats 1 -n 50 \
  --bench-exe "$fake" --out "$work/resume.csv" >/dev/null 2>&1

m="$moex"
g=("$m" generate --prompt-ids 1,2,3 -n 2)
echo "== the command line"
row "mistyped subcommand suggests the real one" 2 "did you mean 'generate'" "$m" genrate
row "unknown option" 2 "--frobnicate" "$m" inspect "$work/good" --frobnicate
row "MOEX_FUSED_MOE_MEASURE malformed" 2 "MOEX_FUSED_MOE_MEASURE" env MOEX_FUSED_MOE_MEASURE=maybe "${g[@]}" -m "$work/good"
row "a preset name as -m says how to make it" 2 "is a preset name.*make-model --preset tiny-mixtral" "${g[@]}" -m tiny-mixtral
gen_bad="$work/gen_bad"; cp -r "$work/good" "$gen_bad"
echo '{"eos_token_id": [1, 99999999]}' > "$gen_bad/generation_config.json"
row "generation_config.json eos id outside the vocabulary" 2 "generation_config.json.*eos_token_id" "${g[@]}" -m "$gen_bad"
echo '{"do_sample": true, "top_p": 7}' > "$gen_bad/generation_config.json"
row "generation_config.json top_p out of range" 2 "generation_config.json.*top_p" "${g[@]}" -m "$gen_bad"
echo "== --spec (speculative decoding flags, docs/speculative.md)"
row "generate --spec unknown" 2 "--spec: expected ngram" "${g[@]}" -m "$work/good" --spec eagle
row "generate --spec-draft without --spec" 2 "--spec-draft needs --spec" "${g[@]}" -m "$work/good" --spec-draft 3
row "generate --spec-draft 0" 2 "--spec-draft" "${g[@]}" -m "$work/good" --spec ngram --spec-draft 0
row "generate --spec-draft 65" 2 "--spec-draft" "${g[@]}" -m "$work/good" --spec ngram --spec-draft 65
row "generate --spec-draft 2x" 2 "--spec-draft" "${g[@]}" -m "$work/good" --spec ngram --spec-draft 2x
row "generate --experts-on tpu" 2 "--experts-on: 'tpu' is not a backend" "${g[@]}" -m "$work/good" --experts-on tpu
# Without CUDA built in, or without a device: an error naming the flag, before the model loads.
row "generate --backend cuda (no device)" 2 "--backend cuda:" "${g[@]}" -m "$work/good" --backend cuda --experts-on cpu
row "generate --experts-on cuda (no device)" 2 "backend cuda:" "${g[@]}" -m "$work/good" --experts-on cuda
echo "== --n-cpu-moe / --experts-on auto (docs/architecture.md, experts placement)"
row "generate --n-cpu-moe -1" 2 "--n-cpu-moe: -1 is out of range" "${g[@]}" -m "$work/good" --n-cpu-moe -1
row "generate --n-cpu-moe two" 2 "--n-cpu-moe: 'two' is not an integer" "${g[@]}" -m "$work/good" --n-cpu-moe two
row "generate --n-cpu-moe empty" 2 "--n-cpu-moe" "${g[@]}" -m "$work/good" --n-cpu-moe ""
row "generate --n-cpu-moe 2^64" 2 "--n-cpu-moe: '18446744073709551616' is not an integer" "${g[@]}" -m "$work/good" --n-cpu-moe 18446744073709551616
row "generate --n-cpu-moe 1025" 2 "--n-cpu-moe: 1025 is out of range; expected an integer in \[0, 1024\]" "${g[@]}" -m "$work/good" --n-cpu-moe 1025
row "chat --n-cpu-moe 1.5" 2 "--n-cpu-moe: '1.5' is not an integer" "$m" chat -m "$work/good" --n-cpu-moe 1.5
row "serve --n-cpu-moe -3" 2 "--n-cpu-moe: -3 is out of range" "$m" serve -m "$work/good" --port 0 --n-cpu-moe -3
row "bench-decode --n-cpu-moe x" 2 "--n-cpu-moe: 'x' is not an integer" "$m" bench-decode -m "$work/good" --n-cpu-moe x
row "generate --experts-on automatic" 2 "--experts-on: 'automatic' is not a backend; expected cpu, cuda or auto" "${g[@]}" -m "$work/good" --experts-on automatic
# Documented: N past the last layer keeps every layer's experts on the host; auto without a
# device (no CUDA here) keeps them on the host too and says why; both run.
row "generate --n-cpu-moe 1024 runs" 0 "experts: layers 1-2 on cpu \(--n-cpu-moe 1024" "${g[@]}" -m "$work/good" --n-cpu-moe 1024
row "generate --experts-on auto without a device runs on the host" 0 "experts: layers 1-2 on cpu \(--experts-on auto: the experts' backend has no device memory\); backend cuda:" "${g[@]}" -m "$work/good" --experts-on auto
row "generate --spec-ngram-min 0" 2 "--spec-ngram-min" "${g[@]}" -m "$work/good" --spec ngram --spec-ngram-min 0
row "generate --spec-ngram-max below min" 2 "--spec-ngram-max" "${g[@]}" -m "$work/good" --spec ngram --spec-ngram-min 3 --spec-ngram-max 2
row "generate --spec with --expert-parallel" 2 "--expert-parallel" "${g[@]}" -m "$work/good" --spec ngram --expert-parallel
row "chat --spec-draft 0" 2 "--spec-draft" "$m" chat -m "$work/good" --spec ngram --spec-draft 0
row "serve --spec unknown" 2 "--spec: expected ngram" "$m" serve -m "$work/good" --port 0 --spec eagle
row "serve --spec-ngram-min without --spec" 2 "--spec-ngram-min needs --spec" "$m" serve -m "$work/good" --port 0 --spec-ngram-min 2
row "serve --spec with --expert-parallel" 2 "--expert-parallel" "$m" serve -m "$work/good" --port 0 --spec ngram --expert-parallel
echo "== --threads (bounded; a refused thread is an error, not an abort)"
row "generate --threads 0" 2 "--threads" "${g[@]}" -m "$work/good" --threads 0
row "generate --threads 5000" 2 "--threads" "${g[@]}" -m "$work/good" --threads 5000
row "bench-decode --threads 5000" 2 "--threads" "$m" bench-decode -m "$work/good" --prompt-ids 1 --threads 5000
row "bench-moe --threads 5000" 2 "--threads" "$m" bench-moe --preset qwen3-30b-a3b --threads 5000
row "tune --threads 5000" 2 "--threads" "$m" tune --quick --threads 5000 --out "$work/cal.json"
row "make-model --threads 0" 2 "--threads" "$m" make-model --preset tiny-qwen3-moe --threads 0 --out "$work/t0"
row "sweep --threads 5000" 2 "--threads" "$m" sweep -m "$work/narrow" --threads 5000 --out "$work/t.csv"
# An AddressSanitizer build reserves terabytes of shadow address space at start, so no
# virtual-memory limit can apply to it: this row runs in the release build only, and says so.
if ldd "$m" 2>/dev/null | grep -q libasan || nm "$m" 2>/dev/null | grep -q __asan_init; then
  echo "skip threads the system refuses (ulimit -v): AddressSanitizer build (checked in the release build)"
else
  row "threads the system refuses (ulimit -v)" 2 "thread|Resource temporarily unavailable" \
    bash -c 'ulimit -v 3000000; exec "$0" make-model --preset tiny-qwen3-moe --threads 1024 --out "$1" -q' \
    "$m" "$work/refused"
fi
echo "== empty values and list-valued flags"
row "tune --dffs ''" 2 "--dffs" "$m" tune --quick --dffs "" --out "$work/cal.json"
row "tune --dffs 256,,512" 2 "--dffs" "$m" tune --quick --dffs 256,,512 --out "$work/cal.json"
row "tune --bits ''" 2 "--bits" "$m" tune --quick --bits "" --out "$work/cal.json"
row "tune --isa ''" 2 "--isa" "$m" tune --quick --isa "" --out "$work/cal.json"
row "tune --threads ''" 2 "--threads" "$m" tune --quick --threads "" --out "$work/cal.json"
row "bench-moe --threads ''" 2 "--threads" "$m" bench-moe --preset qwen3-30b-a3b --threads ""
row "bench-moe --shape 2048,,8,2" 2 "--shape" "$m" bench-moe --shape 2048,,8,2
row "sweep -m ''" 2 "-m" "$m" sweep -m "" --out "$work/e.csv"
row "sweep -m a,,b" 2 "-m.*empty item" "$m" sweep -m "$work/narrow,,$work/narrow" --out "$work/e.csv"
row "generate --prompt-ids ''" 2 "--prompt-ids" "$m" generate -m "$work/good" --prompt-ids ""
row "tokenize --decode 1,,2" 2 "--decode" "$m" tokenize "$work/good" --decode 1,,2
row "tokenize --decode ," 2 "--decode.*empty item" "$m" tokenize "$work/good" --decode ,
# Not an error: no ids decode to the empty string, as tokenizers' decode([]) does.
out=$(timeout 20 "$m" tokenize "$work/good" --decode "" 2>&1); rc=$?
check "tokenize --decode '' prints an empty line" '[ "$rc" = 0 ] && [ -z "$out" ]'
echo "== settings named when malformed"
row "inspect with MOEX_FUSED_MOE=maybe" 2 "MOEX_FUSED_MOE" env MOEX_FUSED_MOE=maybe "$m" inspect "$work/good"
row "inspect with MOEX_FUSED_MOE_MAX_DFF=abc" 2 "MOEX_FUSED_MOE_MAX_DFF" \
  env MOEX_FUSED_MOE_MAX_DFF=abc "$m" inspect "$work/good"
row "tokenize with nothing to do" 2 "nothing to do" "$m" tokenize "$work/good"
row "tokenize -f DIR" 2 "$work/good|--file|directory" "$m" tokenize "$work/good" -f "$work/good"
row "tokenize --decode -1" 2 "--decode" "$m" tokenize "$work/good" --decode -1
row "bench-decode --fused sometimes" 2 "--fused" "$m" bench-decode -m "$work/good" --prompt-ids 1 --fused sometimes
row "tune -o xml" 2 "-o" "$m" tune --quick -o xml --out "$work/cal.json"
row "make-model --preset typo" 2 "did you mean 'tiny-qwen3-moe'" "$m" make-model --preset tiny-qwen3-mo --out "$work/typo"
row "make-model --out is a file" 2 "plain_file.*not a directory" \
  "$m" make-model --preset tiny-qwen3-moe --out "$work/plain_file"
row "sweep --resume with another -n" 2 "-n: the runs so far were measured with 50" \
  env FAKE_COUNTER="$work/counter" FAKE_FAULT=none "$m" sweep -m "$work/narrow" --repeats 2 -n 60 \
  --bench-exe "$fake" --out "$work/resume.csv" --resume
row "sweep --resume with another --warmup-tokens" 2 "--warmup-tokens" \
  env FAKE_COUNTER="$work/counter" FAKE_FAULT=none "$m" sweep -m "$work/narrow" --repeats 2 -n 50 \
  --warmup-tokens 3 --bench-exe "$fake" --out "$work/resume.csv" --resume
row "sweep --resume with another --backend" 2 "--backend: the runs so far were measured with cpu" \
  env FAKE_COUNTER="$work/counter" FAKE_FAULT=none "$m" sweep -m "$work/narrow" --repeats 2 -n 50 \
  --backend cuda --bench-exe "$fake" --out "$work/resume.csv" --resume
row "sweep --backend tpu" 2 "--backend" "$m" sweep -m "$work/narrow" --backend tpu --out "$work/b.csv"
row "sweep --backend cuda --threads 2" 2 "--threads is a CPU flag" \
  "$m" sweep -m "$work/narrow" --backend cuda --threads 2 --out "$work/b.csv"
echo "== hostile checkpoints"
row "config.json is a FIFO" 2 "config.json" "${g[@]}" -m "$work/fifo"
row "config.json links to /dev/zero" 2 "config.json" "${g[@]}" -m "$work/zero"
row "inspect: config.json is a FIFO" 2 "config.json" "$m" inspect "$work/fifo"
row "model dir is a symlink loop" 2 "loop_a" "${g[@]}" -m "$work/loop_a"
row "inspect: model dir is a symlink loop" 2 "loop_a" "$m" inspect "$work/loop_a"
printf 'GGUF\003\000\000\000\377\377\377\377\377\377\377\377\000\000\000\000\000\000\000\000' \
  >"$work/huge_count.gguf"
printf 'GGUF\003\000' >"$work/truncated.gguf"
printf 'not a gguf file at all, just text' >"$work/text.gguf"
row "inspect: GGUF tensor count 2^64-1" 2 "huge_count.gguf.*tensor count 18446744073709551615" \
  "$m" inspect "$work/huge_count.gguf"
row "inspect: GGUF file of 6 bytes" 2 "truncated.gguf.*file is 6 bytes" "$m" inspect "$work/truncated.gguf"
row "inspect: .gguf without the magic" 2 "text.gguf.*GGUF magic" "$m" inspect "$work/text.gguf"
# A valid GGUF (one key, one F32 tensor of ne {8, 3}) lists: its architecture and the tensor's
# row-major shape [3, 8].
python3 - "$work/ok.gguf" <<'PY'
import struct, sys
s = lambda b: struct.pack("<Q", len(b)) + b
out = b"GGUF" + struct.pack("<IQQ", 3, 1, 1) + s(b"general.architecture") + struct.pack("<I", 8) + s(b"tiny")
out += s(b"w") + struct.pack("<IQQIQ", 2, 8, 3, 0, 0)
out += b"\0" * (-len(out) % 32) + bytes(96)
open(sys.argv[1], "wb").write(out)
PY
inspect_out=$("$m" inspect "$work/ok.gguf" 2>&1)
check "inspect FILE.gguf lists the architecture and the tensor [3, 8]" \
  'grep -q "architecture: tiny" <<<"$inspect_out" && grep -qE "^  w +F32 +\[3, 8\] +96 bytes" <<<"$inspect_out"'
row "num_attention_heads = 4 + 2^58" 2 "num_attention_heads" "${g[@]}" -m "$work/heads_huge"
row "num_hidden_layers = 1000000000" 2 "num_hidden_layers" "${g[@]}" -m "$work/layers_huge"
row "eos_token_id = 4294967301" 2 "eos_token_id" "${g[@]}" -m "$work/eos_huge"
row "max_position_embeddings = 0" 2 "max_position_embeddings" "${g[@]}" -m "$work/max_pos_zero"
row "max_position_embeddings = -1" 2 "max_position_embeddings" "${g[@]}" -m "$work/max_pos_negative"
for k in 1 3 5; do
  row "safetensors header length $k bytes short" 2 "model.safetensors" "${g[@]}" -m "$work/short$k"
done
row "prompt longer than the context" 2 "longer than the model's context" \
  "$m" generate -m "$work/short_context" --prompt-ids 1,2,3,4,5,6,7,8,9,10 -n 1
echo "== moex serve flags (each refused before anything listens)"
if "$m" serve --help >/dev/null 2>&1; then
  sv=("$m" serve -m "$work/good")
  row "serve --port 70000" 2 "--port: 70000 is out of range" "${sv[@]}" --port 70000
  row "serve --port abc" 2 "--port" "${sv[@]}" --port abc
  sv+=(--port 0)
  row "serve --parallel 0" 2 "--parallel" "${sv[@]}" --parallel 0
  row "serve --parallel 257" 2 "--parallel" "${sv[@]}" --parallel 257
  row "serve --ctx-size 1" 2 "--ctx-size" "${sv[@]}" --ctx-size 1
  row "serve --api-key ''" 2 "--api-key" "${sv[@]}" --api-key ""
  row "serve --alias ''" 2 "--alias" "${sv[@]}" --alias ""
  row "serve --threads 0" 2 "--threads" "${sv[@]}" --threads 0
  row "serve --cors-origin with a path" 2 "--cors-origin.*https://a.example/x" "${sv[@]}" \
    --cors-origin https://a.example/x
  row "serve --health-needs-key without --api-key" 2 "--health-needs-key" "${sv[@]}" \
    --health-needs-key
  row "serve --host on no local address" 2 "cannot listen on 203.0.113.7" "${sv[@]}" --host 203.0.113.7
  no_tok="$work/no_tok"; cp -r "$work/good" "$no_tok"; rm "$no_tok/tokenizer.json"
  row "serve without tokenizer.json" 2 "no_tok.*tokenizer.json" "$m" serve -m "$no_tok" --port 0
else
  echo "skip moex serve flags: this moex was built without cpp-httplib (no serve command)"
fi

echo "== moex perplexity"
printf 'the cat sat on the mat and the dog sat on the log. %.0s' $(seq 60) > "$work/text.txt"
pp=("$m" perplexity -m "$work/good")
row "perplexity without -f" 2 "-f FILE" "${pp[@]}"
row "perplexity -f missing" 2 "nope.txt.*text file" "${pp[@]}" -f "$work/nope.txt"
row "perplexity -f a directory" 2 "text file" "${pp[@]}" -f "$work"
row "perplexity --ctx 2" 2 "--ctx" "${pp[@]}" -f "$work/text.txt" --ctx 2
row "perplexity --ctx abc" 2 "--ctx" "${pp[@]}" -f "$work/text.txt" --ctx abc
row "perplexity text shorter than a window" 2 "fewer than one window" "${pp[@]}" \
  -f "$work/text.txt" --ctx 100000
row "perplexity --chunks 0" 2 "--chunks" "${pp[@]}" -f "$work/text.txt" --chunks 0
row "perplexity --fused maybe" 2 "--fused maybe" "${pp[@]}" -f "$work/text.txt" --fused maybe
row "perplexity -o xml" 2 "-o xml" "${pp[@]}" -f "$work/text.txt" -o xml
row "perplexity --save-logits with --fused both" 2 "--save-logits" "${pp[@]}" \
  -f "$work/text.txt" --fused both --save-logits "$work/x.logits"
row "perplexity --save-logits into a missing directory" 2 "logits file.*no/such" "${pp[@]}" \
  -f "$work/text.txt" --ctx 32 --chunks 1 --save-logits "$work/no/such/x.logits"
head -c 100 /dev/urandom > "$work/junk.logits"
row "perplexity --kl-divergence on junk" 2 "junk.logits.*(not a moex logits file|shorter)" \
  "${pp[@]}" --kl-divergence "$work/junk.logits"
"$m" perplexity -m "$work/good" -f "$work/text.txt" --ctx 32 --chunks 2 \
  --save-logits "$work/base.logits" >/dev/null 2>&1
check "perplexity --save-logits writes the file" '[ -s "$work/base.logits" ]'
cp "$work/base.logits" "$work/cut.logits" && truncate -s -4 "$work/cut.logits"
row "perplexity --kl-divergence on a truncated file" 2 "cut.logits.*truncated" \
  "${pp[@]}" --kl-divergence "$work/cut.logits"
row "perplexity --kl-divergence with --ctx" 2 "leave out --ctx" "${pp[@]}" \
  --kl-divergence "$work/base.logits" --ctx 16
printf 'a different text entirely, with other words in it. %.0s' $(seq 60) > "$work/other.txt"
row "perplexity --kl-divergence on another text" 2 "does not tokenize to the base run" \
  "${pp[@]}" --kl-divergence "$work/base.logits" -f "$work/other.txt"

echo "== a quantization section that disagrees with the packed tensors"
# Read as packed (mlx-lm does the same), and said once, naming a tensor and both values.
variant bits_8 'j["quantization"]["bits"] = 8; j["quantization_config"]["bits"] = 8'
err=$(timeout 20 "$m" generate -m "$work/bits_8" --prompt-ids 1,2,3 -n 2 2>&1 >/dev/null); rc=$?
check "config bits 8 over 4-bit tensors: runs, one warning naming a tensor, 8 and 4 (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(grep -c "warning:.*bits 8.*tensor .*weight. is packed as bits 4" <<<"$err")" = 1 ]'
err=$(timeout 20 "$m" generate -m "$work/good" --prompt-ids 1,2,3 -n 2 2>&1 >/dev/null)
check "a section that describes the tensors: no warning" '! grep -q "warning:" <<<"$err"'

echo "== figures printed about the run itself"
# `peak memory` is this process's own peak: an exec from a parent with 512 MiB resident must
# not carry the parent's high-water mark (getrusage's ru_maxrss does, on Linux).
err=$(python3 -c 'import os, sys; big = b"x" * (512 << 20); os.execv(sys.argv[1], sys.argv[1:])' \
  "$m" generate -m "$work/good" --prompt-ids 1,2,3 -n 2 2>&1 >/dev/null)
peak=$(sed -n 's/^peak memory: \([0-9.]*\) \([KMG]i\{0,1\}B\).*/\1 \2/p' <<<"$err")
check "generate exec'd from a 512 MiB process prints its own peak memory ($peak)" \
  '[ -n "$peak" ] && awk -v v="${peak% *}" -v u="${peak#* }" "BEGIN { exit !(u != \"GiB\" && (u != \"MiB\" || v < 256)) }"'

echo "== make-model output is complete or absent"
# A full disk (RLIMIT_FSIZE with SIGXFSZ ignored: writes fail with EFBIG) is a clean error;
# the same limit with the default SIGXFSZ kills the process mid-write, as Ctrl-C would.
row "make-model on a full disk" 2 "safetensors.*File too large" \
  bash -c 'trap "" XFSZ; ulimit -f 256; exec "$0" make-model --preset tiny-qwen3-moe --out "$1" -q' \
  "$m" "$work/full"
row "make-model on a disk full at config.json says why" 2 "config.json.*File too large" \
  bash -c 'trap "" XFSZ; ulimit -f 1; exec "$0" make-model --preset tiny-qwen3-moe --out "$1" -q' \
  "$m" "$work/full"
check "a failed make-model leaves no directory" '[ ! -e "$work/full" ]'
check "a failed make-model leaves no temporary" '[ -z "$(ls -d "$work"/full.tmp-* 2>/dev/null)" ]'
(timeout 20 bash -c 'ulimit -f 256; exec "$0" make-model --preset tiny-qwen3-moe --out "$1" -q' \
  "$m" "$work/killed") >/dev/null 2>&1
check "a killed make-model leaves no directory under the final name" '[ ! -e "$work/killed" ]'
cp -r "$work/good" "$work/half" && truncate -s 1000 "$work/half/model.safetensors"
out=$(timeout 60 "$m" make-model --preset tiny-qwen3-moe --out "$work/half" --reuse 2>&1)
check "--reuse rebuilds a truncated checkpoint" 'grep -q "incomplete" <<<"$out" && [ "$(stat -c %s "$work/half/model.safetensors")" = "$(stat -c %s "$work/good/model.safetensors")" ]'
out=$(timeout 60 "$m" make-model --preset tiny-qwen3-moe --out "$work/killed" --reuse 2>&1)
check "--reuse after a kill builds it and removes the dead temporary" '[ -f "$work/killed/config.json" ] && [ -z "$(ls -d "$work"/killed.tmp-* 2>/dev/null)" ]'
# A temporary of a make-model that no longer runs goes when make-model starts, also when
# --reuse keeps the checkpoint; one of a process still running stays.
bash -c 'exit 0' & dead=$!; wait "$dead"
mkdir -p "$work/half.tmp-$dead-AbCdEf" "$work/half.tmp-$$-GhIjKl"
out=$(timeout 60 "$m" make-model --preset tiny-qwen3-moe --out "$work/half" --reuse 2>&1)
check "--reuse keeps a complete checkpoint" 'grep -q "^kept" <<<"$out"'
check "--reuse removes a dead make-model's temporary, not a live one's" \
  '[ ! -e "$work/half.tmp-$dead-AbCdEf" ] && [ -d "$work/half.tmp-$$-GhIjKl" ] && grep -q "removed 1 temporary" <<<"$out"'

echo "$fails failure(s) over $rows table rows and the checks"
[ "$fails" -eq 0 ]
