#!/usr/bin/env bash
# The GPU check in one command (see benchmarks/gpu/README.md):
#
#   bash benchmarks/gpu/run.sh                   # report in results/gpu-<time>/ (or $OUT)
#   bash benchmarks/gpu/run.sh --out DIR --budget-s 560
#
# Uses this Python environment when it has labkit's packages (a learner's `pip install -e .`);
# otherwise (a GPU machine without network) the carry folder made by pack.py: its wheels
# installed into benchmarks/gpu/.work/site, llama-cpp-python's Python files, the tokenizer.
# Every other option goes to run.py.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
carry="$here/carry"
py=${PYTHON:-}
if [ -z "$py" ]; then
  if [ -x "$repo/.venv/bin/python" ]; then py="$repo/.venv/bin/python"; else py=python3; fi
fi
export PYTHONUNBUFFERED=1
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
if ! "$py" -c "import llama_cpp, gguf, starlette, uvicorn" 2>/dev/null; then
  if [ ! -d "$carry/wheels" ]; then
    echo "labkit's packages are missing and there is no $carry: pip install -e . first," \
         "or make the carry folder with: python benchmarks/gpu/pack.py" >&2
    exit 2
  fi
  site="$here/.work/site"
  if [ ! -f "$site/.installed" ]; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$site" "$carry"/wheels/*.whl
    touch "$site/.installed"
  fi
  export PYTHONPATH="$repo:$carry/python:$site"
  export LABKIT_SYNTHETIC_TOKENIZER="${LABKIT_SYNTHETIC_TOKENIZER:-$carry/tokenizer.gguf}"
fi
exec "$py" "$here/run.py" "$@"
