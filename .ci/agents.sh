#!/usr/bin/env bash
# Installs the real agent CLIs (Claude Code, Codex) at the versions pinned in tests/agents/package.json and
# package-lock.json into a project-local prefix (default .agents/, gitignored). Prints the bin directory to put
# on PATH. Usage: .ci/agents.sh [PREFIX]
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:-.agents}"
mkdir -p "$prefix"
cp tests/agents/package.json "$prefix/package.json"
if [ -f tests/agents/package-lock.json ]; then
  cp tests/agents/package-lock.json "$prefix/package-lock.json"
  (cd "$prefix" && npm ci --no-audit --no-fund --loglevel=error)
else
  (cd "$prefix" && npm install --no-audit --no-fund --loglevel=error --save-exact)
  cp "$prefix/package-lock.json" tests/agents/package-lock.json
fi
bin="$(cd "$prefix/node_modules/.bin" && pwd)"
"$bin/claude" --version >&2
"$bin/codex" --version >&2
echo "$bin"
