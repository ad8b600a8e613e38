#!/usr/bin/env bash
# Create benchmarks/.peers-venv with the peer SDKs (benchmarks/peer-requirements.txt)
# and arknb itself in editable mode, so every benchmark subject runs on the same
# interpreter build. Idempotent: does nothing when the pins and pyproject are unchanged.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="$here/.peers-venv"
reqs="$here/peer-requirements.txt"

# Same base interpreter as the project venv when there is one.
base_python="${PEERS_PYTHON:-}"
if [[ -z "$base_python" && -f "$repo/.venv/pyvenv.cfg" ]]; then
    base_python="$(sed -n 's/^executable = //p' "$repo/.venv/pyvenv.cfg")"
fi
base_python="${base_python:-python3}"

stamp="$venv/.installed-stamp"
want="$(cat "$reqs" "$repo/pyproject.toml" | sha256sum | cut -d' ' -f1) $($base_python -V 2>&1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "peers venv up to date: $venv"
    exit 0
fi

if [[ ! -x "$venv/bin/python" ]]; then
    "$base_python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$reqs"
# arknb in editable mode. While the repo cannot be built yet (e.g. its README is still
# missing) fall back to the same effect by hand: its dependencies plus a .pth entry.
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
if "$venv/bin/python" -m pip install --quiet -e "$repo" 2>"$venv/.editable-install.log"; then
    rm -f "$site/arknb-dev.pth"
else
    echo "pip install -e $repo failed (see $venv/.editable-install.log); using a .pth entry instead" >&2
    mapfile -t deps < <("$venv/bin/python" -c '
import sys, tomllib
print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]))' "$repo/pyproject.toml")
    "$venv/bin/python" -m pip install --quiet "${deps[@]}"
    echo "$repo" > "$site/arknb-dev.pth"
    want="$want (pth)"  # retry the real editable install next time
fi
echo "$want" > "$stamp"
"$venv/bin/python" -m pip list --format=freeze 2>/dev/null \
    | grep -iE '^(openai-agents|openai|pydantic-ai-slim|pydantic|langgraph|langchain-core|pyinstrument|arknb)==' \
    || true
echo "peers venv ready: $venv"
