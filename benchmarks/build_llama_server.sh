#!/usr/bin/env bash
# Build llama.cpp's llama-server and llama-batched-bench from the very llama.cpp sources
# that the installed llama-cpp-python was compiled from (its source distribution vendors
# them), with the same CPU features (GGML_NATIVE, as llama-cpp-python's own build), so
# that a speed comparison with labkit's engine compares servers, not compilers.
#
#   bash benchmarks/build_llama_server.sh            # prints the folder holding the binaries
#
# The build lives outside the tracked files, in ~/.cache/labkit/llama.cpp-<version>/.
# Extra CMake flags (for a GPU build, say) come from $CMAKE_ARGS, as for llama-cpp-python.
set -euo pipefail
PY=${PYTHON:-python}
version=$($PY -c "import llama_cpp; print(llama_cpp.__version__)")
root="${LABKIT_CACHE:-$HOME/.cache/labkit}/llama.cpp-$version"
bin="$root/build/bin"
if [ -x "$bin/llama-server" ] && [ -x "$bin/llama-batched-bench" ]; then
  echo "$bin"; exit 0
fi
mkdir -p "$root"
cd "$root"
if [ ! -d src ]; then
  $PY -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d sdist >&2
  mkdir -p src && tar -xzf sdist/llama_cpp_python-"$version".tar.gz -C src --strip-components=1
fi
# shellcheck disable=SC2086
cmake -S src/vendor/llama.cpp -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF ${CMAKE_ARGS:-} >&2
cmake --build build --config Release -j "$(nproc)" --target llama-server llama-batched-bench >&2
echo "$bin"
