#!/usr/bin/env bash
# Fails when arknb/static/ is not what a fresh build of js/src/ gives (a stale bundle).
# Usage: bash js/check_bundle.sh   (or: npm --prefix js run check)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -x node_modules/.bin/esbuild ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
node build.mjs "$tmp"
status=0
for f in chat.js chat.css timeline.js timeline.css compare.js compare.css graph.js graph.css; do
  if ! cmp -s "$tmp/$f" "../arknb/static/$f"; then
    echo "stale bundle: arknb/static/$f differs from a fresh build of js/src/ (run: npm --prefix js run build)" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "bundle up to date"
exit "$status"
