#!/usr/bin/env bash
# Bad input to `moex generate` / `moex bench-decode` must end with a clear message and exit
# code 2 (never a crash): unreadable directory, unknown model_type, wrong field type, missing
# and mis-shaped tensors, prompt longer than the context, -n 0 / negative, bad flags. Then
# what must be accepted: flag words in any case, --decode with commas, --version, a
# continuation stopped at the context limit, a sampled run's seed.
# Usage: cli_errors_test.sh MOEX_EXE
set -u
moex="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0

# expect_error NAME SUBSTRING CMD...: exit code 2 and SUBSTRING in stderr.
expect_error() {
  local name="$1" want="$2"
  shift 2
  local err rc
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" <<<"$err"; then
    echo "FAIL $name: exit $rc, stderr: $err (wanted exit 2 and '$want')"
    fails=$((fails + 1))
  else
    echo "ok   $name: $(head -c 160 <<<"$err" | head -1)"
  fi
}

"$moex" make-model --preset tiny-qwen3-moe --dtype f32 --out "$work/good" -q >/dev/null 2>&1 ||
  { echo "make-model failed"; exit 1; }
variant() {  # variant NAME PYTHON-EXPR-ON-j: a copy of good/ with config.json edited
  cp -r "$work/good" "$work/$1"
  python3 - "$work/$1/config.json" "$2" <<'PY'
import json, sys
p, expr = sys.argv[1], sys.argv[2]
j = json.load(open(p))
exec(expr)
json.dump(j, open(p, "w"))
PY
}
variant unknown_type 'j["model_type"] = "gpt_nonexistent"'
variant wrong_type 'j["num_experts"] = "eight"'
variant missing_tensor 'j["num_hidden_layers"] += 1'
variant misshaped 'j["moe_intermediate_size"] *= 2'
variant short_context 'j["max_position_embeddings"] = 8'
touch "$work/plain_file"

g=("$moex" generate --prompt-ids 1,2,3 -n 4)
expect_error no_directory "$work/nope" "${g[@]}" -m "$work/nope"
expect_error not_a_directory "plain_file" "${g[@]}" -m "$work/plain_file"
expect_error unknown_model_type "gpt_nonexistent" "${g[@]}" -m "$work/unknown_type"
expect_error wrong_field_type "num_experts" "${g[@]}" -m "$work/wrong_type"
expect_error missing_tensor "model.layers.3" "${g[@]}" -m "$work/missing_tensor"
expect_error misshaped_tensor "switch_mlp" "${g[@]}" -m "$work/misshaped"
expect_error prompt_longer_than_context "longer than the model's context" \
  "$moex" generate -m "$work/short_context" --prompt-ids 1,2,3,4,5,6,7,8,9,10 -n 1
expect_error n_zero "-n" "$moex" generate -m "$work/good" --prompt-ids 1,2 -n 0
expect_error n_negative "-n" "$moex" generate -m "$work/good" --prompt-ids 1,2 -n -3
expect_error bad_prompt_ids "--prompt-ids" "$moex" generate -m "$work/good" --prompt-ids 1,x
expect_error token_outside_vocab "vocabulary" "$moex" generate -m "$work/good" --prompt-ids 999999 -n 1
expect_error bad_fused "--fused" "$moex" generate -m "$work/good" --prompt-ids 1 --fused maybe
expect_error bad_max_dff "--max-dff" "$moex" generate -m "$work/good" --prompt-ids 1 --max-dff " 4096"
expect_error bad_env_max_dff "MOEX_FUSED_MOE_MAX_DFF" env MOEX_FUSED_MOE_MAX_DFF=abc \
  "$moex" generate -m "$work/good" --prompt-ids 1 -n 1
expect_error bad_precision "fast, standard or exact" "$moex" generate -m "$work/good" --prompt-ids 1 --precision high
expect_error bad_env_precision "MOEX_PRECISION" env MOEX_PRECISION=2 \
  "$moex" generate -m "$work/good" --prompt-ids 1 -n 1
expect_error bench_precision_and_ids "--prompt-tokens" "$moex" bench-decode -m "$work/good" --prompt-ids 1 --prompt-tokens 8
expect_error bench_prompt_tokens_zero "--prompt-tokens" "$moex" bench-decode -m "$work/good" --prompt-tokens 0
expect_error bad_weights "map or copy" "$moex" generate -m "$work/good" --prompt-ids 1 --weights disk
expect_error bad_env_weights "MOEX_WEIGHTS" env MOEX_WEIGHTS=mmap \
  "$moex" generate -m "$work/good" --prompt-ids 1 -n 1
expect_error bad_temp "--temp" "$moex" generate -m "$work/good" --prompt-ids 1 --temp -1
expect_error bad_threads "--threads" "$moex" generate -m "$work/good" --prompt-ids 1 --threads 0
expect_error bench_n_zero "-n" "$moex" bench-decode -m "$work/good" --prompt-ids 1,2 -n 0
expect_error bench_bad_fused "--fused" "$moex" bench-decode -m "$work/good" --prompt-ids 1 --fused sometimes
expect_error bench_bad_output "-o" "$moex" bench-decode -m "$work/good" --prompt-ids 1 -o xml
expect_error bench_context "exceeds the model's context" \
  "$moex" bench-decode -m "$work/short_context" --prompt-ids 1,2,3 -n 10 --warmup-tokens 0
expect_error bench_missing_tensor "model.layers.3" "$moex" bench-decode -m "$work/missing_tensor" --prompt-ids 1

# bench-decode decodes exactly n tokens per pass whatever the EOS (ignored), in every format.
out=$("$moex" bench-decode -m "$work/good" --prompt-ids 1,2,3 -n 7 --warmup-tokens 2 --repeats 2 --fused both -o json)
if ! python3 -c '
import json, sys
j = json.loads(sys.argv[1])
assert [a["arm"] for a in j["arms"]] == ["off", "on"], j["arms"]
for a in j["arms"]:
    assert len(a["runs"]) == 2 and all(r["generated_tokens"] == 7 for r in a["runs"])
off, on = j["arms"]
assert off["path_counters"]["fused_calls"] == 0 and off["path_counters"]["fallback_calls"] > 0
assert on["path_counters"]["fallback_calls"] == 0 and on["path_counters"]["fused_calls"] > 0
assert "fused_over_fallback" in j
' "$out"; then
  echo "FAIL bench-decode json: $out"
  fails=$((fails + 1))
else
  echo "ok   bench-decode --fused both json: exact token counts, each arm on its own path"
fi
# What a newcomer tries first is accepted: flag words in any case, ids with commas, --version;
# a continuation longer than the context stops at the limit; a sampled run names its seed.
expect_ok() {  # expect_ok NAME CONDITION: CONDITION (shell) holds
  if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}
expect_ok version '"$moex" --version | grep -q "^moex "'
expect_ok isa_any_case '"$moex" generate -m "$work/good" --prompt-ids 1,2 -n 2 --isa SCALAR --fused ON >/dev/null 2>&1'
expect_ok precision_any_case '"$moex" generate -m "$work/good" --prompt-ids 1,2 -n 2 --precision FAST -v 2>&1 >/dev/null | grep -Eq "precision (fast|f32)"'
expect_ok bench_prompt_tokens '"$moex" bench-decode -m "$work/good" --prompt-tokens 24 -n 2 --warmup-tokens 0 --repeats 1 -o json 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); assert j[\"settings\"][\"prompt_tokens\"] == 24 and j[\"host\"][\"precision\"] in (\"exact\", \"f32\")"'
expect_ok weights_copy_same_logits '"$moex" generate -m "$work/good" --prompt-ids 1,2,3 -n 4 --dump-logits "$work/lm.bin" >/dev/null 2>&1 && "$moex" generate -m "$work/good" --prompt-ids 1,2,3 -n 4 --weights copy --dump-logits "$work/lc.bin" >/dev/null 2>&1 && cmp -s "$work/lm.bin" "$work/lc.bin"'
expect_ok output_any_case '"$moex" bench-decode -m "$work/good" --prompt-ids 1 -n 2 --warmup-tokens 0 --repeats 1 --fused BOTH -o JSON 2>/dev/null | python3 -c "import json,sys; json.load(sys.stdin)"'
expect_ok json_progress_on_stderr_only '"$moex" bench-decode -m "$work/good" --prompt-ids 1 -n 2 --warmup-tokens 0 --repeats 1 -o json 2>&1 >/dev/null | grep -q "loaded .* in"'
expect_ok csv_columns_unique '[ -z "$("$moex" bench-decode -m "$work/good" --prompt-ids 1 -n 2 --warmup-tokens 0 --repeats 1 -o csv 2>/dev/null | head -1 | tr , "\n" | sort | uniq -d)" ]'
d1=$("$moex" tokenize "$work/good" --decode 1,2,3 2>&1)
d2=$("$moex" tokenize "$work/good" --decode "1 2 3" 2>&1)
d3=$("$moex" tokenize "$work/good" --decode "1, 2, 3" 2>&1)
expect_ok decode_commas_and_spaces '[ -n "$d1" ] && [ "$d1" = "$d2" ] && [ "$d1" = "$d3" ]'
out=$("$moex" generate -m "$work/short_context" --prompt-ids 1,2,3 -n 20 --ignore-eos 2>"$work/err"); rc=$?
expect_ok stops_at_context_limit '[ $rc -eq 0 ] && grep -q "stopped at the context limit after 6 of 20 tokens" "$work/err" && [ $(wc -w <<<"$out") -eq 6 ]'
"$moex" generate -m "$work/good" --prompt-ids 1,2 -n 4 --temp 0.9 >/dev/null 2>"$work/err"
seed=$(sed -n "s/.*sampling seed \([0-9]*\).*/\1/p" "$work/err")
expect_ok sampling_names_its_seed '[ -n "$seed" ]'
a=$("$moex" generate -m "$work/good" --prompt-ids 1,2 -n 6 --temp 0.9 --seed "$seed" --ignore-eos 2>/dev/null)
b=$("$moex" generate -m "$work/good" --prompt-ids 1,2 -n 6 --temp 0.9 --seed "$seed" --ignore-eos 2>/dev/null)
expect_ok seed_repeats_a_run '[ -n "$a" ] && [ "$a" = "$b" ]'

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
