#!/usr/bin/env bash
# Record a version series: the cpu suite under every torch release that
# scripts/series_venvs.sh installed, all releases interleaved in one invocation
# (cases alternate between the stacks, so machine drift falls on every release alike),
# INVOCATIONS times one after the other.
#
#   scripts/record_series.sh [VENVS] [RUNS] [INVOCATIONS]
#
# VENVS: the venvs' folder (default venvs/ at the repository root), one torch-X per
# release; RUNS: the archive (default runs/), where each release's runs are filed under
# the label torch-X; INVOCATIONS: default 3. A release whose venv is missing or not
# complete is left out and named; at least two are needed. COLLECTOR overrides the
# command that runs the collector (default: the project's .venv, else python3 -m collector).
# An invocation that is interrupted stops the script; finish it with
# `collector run --resume RUN_DIR` for each run folder it names.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
INVOCATIONS=${3:-3}
say() { printf '\033[1m[series]\033[0m %s\n' "$*" >&2; }

# A folder as the collector is given it: relative to the repository when inside it.
folder() {
  local abs
  abs=$(cd "$1" 2>/dev/null && pwd) || { say "no folder $1"; return 2; }
  case $abs in "$ROOT") echo . ;; "$ROOT"/*) echo "${abs#"$ROOT"/}" ;; *) echo "$abs" ;; esac
}
SERIES=(2.10.0 2.11.0 2.12.1 2.13.0 2.14.1 2.15.0)
MARKER=.series-complete  # written by series_venvs.sh once a venv is installed and checked

if [ -n "${COLLECTOR:-}" ]; then
  read -r -a COLLECT <<<"$COLLECTOR"
elif [ -x "$ROOT/.venv/bin/python" ]; then
  COLLECT=("$ROOT/.venv/bin/python" -m collector)
else
  COLLECT=(python3 -m collector)
fi
VENVS=$(folder "${1:-$ROOT/venvs}") || exit 2
mkdir -p "${2:-$ROOT/runs}" && RUNS=$(folder "${2:-$ROOT/runs}") || exit 2
case $INVOCATIONS in '' | *[!0-9]* | 0) say "INVOCATIONS must be a whole number above 0, not '$INVOCATIONS'"; exit 2 ;; esac

cd "$ROOT"  # the collector runs from the repository it belongs to; VENVS and RUNS are relative to it
stacks=() releases=() missing=()
for release in "${SERIES[@]}"; do
  venv=$VENVS/torch-$release
  if [ -f "$venv/$MARKER" ] && [ -x "$venv/bin/python" ]; then
    stacks+=(--python "$venv/bin/python" --label "torch-$release")
    releases+=("$release")
  else
    missing+=("$release")
  fi
done
[ ${#missing[@]} -gt 0 ] && say "left out (no complete venv under $VENVS): ${missing[*]}"
if [ ${#releases[@]} -lt 2 ]; then
  say "found ${#releases[@]} complete venv(s) under $VENVS; a series needs at least two (run scripts/series_venvs.sh)"
  exit 2
fi
say "releases: ${releases[*]}; runs into $RUNS; $INVOCATIONS invocation(s)"

for release in "${releases[@]}"; do
  say "collector doctor for torch $release"
  "${COLLECT[@]}" doctor --suite cpu --out "$RUNS" --python "$VENVS/torch-$release/bin/python" || true
done

for i in $(seq 1 "$INVOCATIONS"); do
  say "invocation $i of $INVOCATIONS: collector run --suite cpu --interleave over ${#releases[@]} releases"
  start=$(date +%s)
  "${COLLECT[@]}" run --suite cpu --interleave "${stacks[@]}" --out "$RUNS"
  say "invocation $i of $INVOCATIONS finished in $(($(date +%s) - start)) s"
done
