#!/usr/bin/env bash
# Installs the Codex CLI (npm @openai/codex, pinned) into a cache folder when it is missing, and
# prints the path of the `codex` binary. Idempotent: a second run installs nothing.
#
# Usage: tests/fakes/install_codex.sh [DIR]
#   DIR defaults to $TRIBUNAL_CODEX_DIR, else ~/.cache/tribunal/codex-<version>.
# The tests find the binary through $CODEX_BIN or this same default folder (tests/fakes/codex.py).
set -euo pipefail

VERSION=0.171.0
DIR="${1:-${TRIBUNAL_CODEX_DIR:-${HOME}/.cache/tribunal/codex-${VERSION}}}"

find_binary() {
    # The platform package (e.g. @openai/codex-linux-x64) carries a static musl binary under
    # vendor/<triple>/bin/codex (or vendor/<triple>/codex/codex in some releases).
    find "$DIR/node_modules" -path '*/vendor/*' -type f -name codex -perm -u+x 2>/dev/null | sort | head -n 1
}

bin="$(find_binary || true)"
if [[ -z "$bin" ]]; then
    mkdir -p "$DIR"
    npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "@openai/codex@${VERSION}" >&2
    bin="$(find_binary || true)"
fi
if [[ -z "$bin" ]]; then
    echo "install_codex.sh: no codex binary under $DIR after npm install" >&2
    exit 1
fi
"$bin" --version >&2
echo "$bin"
