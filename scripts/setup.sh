#!/usr/bin/env bash
# Set up .venv for imagebench: reuse an importable torch, else install one; then
# imagebench itself with the reporter's and (with --test) the tests' packages.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
WITH_TEST=0
[ "${1:-}" = "--test" ] && WITH_TEST=1

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

if [ ! -x "$VENV/bin/python" ]; then
  if "$PYTHON" -c "import torch" >/dev/null 2>&1; then
    say "reusing the torch already importable from $PYTHON"
    "$PYTHON" -m venv --system-site-packages "$VENV"
  else
    "$PYTHON" -m venv "$VENV"
  fi
fi
# pip speaks as it goes (what it collects, a progress bar while it downloads): an install
# of torch takes minutes, and a silent one looks hung.
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
# --progress-bar is an option of `pip install`, not of pip itself.
INSTALL=(install --progress-bar on)
# pip's "Requirement already satisfied" lines are left out: they say nothing about progress.
quiet_if_present() { "$@" | grep -v '^Requirement already satisfied' || [ "${PIPESTATUS[0]}" = 0 ]; }

if ! "$VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
  # No torch anywhere: install one. The collector itself never installs torch; this is
  # only the set-up of a machine that has none. torchvision is needed by the ResNet
  # workloads; where the pair is not available, a CPU torch alone still runs the rest.
  say "no torch found: installing torch and torchvision"
  "${PIP[@]}" "${INSTALL[@]}" "torch==2.14.1" "torchvision==0.29.1" \
    || "${PIP[@]}" "${INSTALL[@]}" "torch==2.13.0" \
    || "${PIP[@]}" "${INSTALL[@]}" torch
fi

extras="collector,reporter"
[ "$WITH_TEST" = 1 ] && extras="$extras,test"
say "installing imagebench[$extras] and what it needs (pip's own lines follow)"
quiet_if_present "${PIP[@]}" "${INSTALL[@]}" -e ".[$extras]"
# transformers provides the BERT workload's model (built from a config, no download).
"$VENV/bin/python" -c "import transformers" >/dev/null 2>&1 || { say "installing transformers (the BERT workloads' models)"; quiet_if_present "${PIP[@]}" "${INSTALL[@]}" "transformers>=4.40"; } || say "transformers unavailable: BERT cases will be recorded as skipped"

# Charts are laid out by vl-convert, which measures text with the fonts installed here:
# without one that has Chinese glyphs, the labels of the Chinese charts overlap.
if ! fc-list :lang=zh 2>/dev/null | grep -q .; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing a font with Chinese glyphs (fonts-wqy-microhei) for the charts"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei >/dev/null
  else
    say "no font with Chinese glyphs and none can be installed here: Chinese chart labels may overlap"
  fi
fi

if [ "$WITH_TEST" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing headless Chromium for the browser tests"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    say "chromium missing and cannot be installed here: browser tests will be skipped"
  fi
fi
touch "$VENV/.ok"
say "ready: $VENV/bin/collector and $VENV/bin/reporter (or \`source $VENV/bin/activate\`, then collector and reporter)"
