#!/usr/bin/env bash
# One venv per torch release, for recording a version series interleaved on one host
# (scripts/record_series.sh).
#
#   scripts/series_venvs.sh [FOLDER]      (default: venvs/ at the repository root)
#
# FOLDER/torch-X gets torch==X from the package index (the plain wheel of the release:
# on x86_64 Linux that is the CUDA build, which also runs on a CPU), the torchvision
# release built for it, and the packages the collector's workers use inside a stack,
# at the same versions in every venv, so that the venvs differ only by release.
# The venvs never get imagebench itself: the collector puts its own package on the
# workers' path.
#
# A venv that is already complete (installed and checked) is skipped. A release that
# cannot be installed is reported with pip's reason, the other releases go on, and the
# script exits 1 at the end. PYTHON picks the interpreter the venvs are made from
# (default python3); RELEASES="2.13.0 2.14.1" limits the series to some releases.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-$ROOT/venvs}
PYTHON=${PYTHON:-python3}

# torch release -> the torchvision release that requires exactly it (each wheel's
# Requires-Dist; 0.29.x asks for torch>=2.14.0).
declare -A TORCHVISION=(
  [2.10.0]=0.25.0
  [2.11.0]=0.26.0
  [2.12.1]=0.27.1
  [2.13.0]=0.28.0
  [2.14.1]=0.29.1
  [2.15.0]=0.30.0
)
SERIES=(2.10.0 2.11.0 2.12.1 2.13.0 2.14.1 2.15.0)
read -r -a WANTED <<<"${RELEASES:-${SERIES[*]}}"

# What a worker imports beyond torch: pyarrow (required), psutil, rich and nvidia-ml-py
# (the fingerprint and the GPU state, when present), transformers (the BERT cases), numpy.
EXTRAS=(pyarrow==26.0.1 psutil==7.2.2 rich==15.0.0 nvidia-ml-py==13.615.71 transformers==5.25.0 numpy==2.4.6)
MARKER=.series-complete

say() { printf '\033[1m[series]\033[0m %s\n' "$*"; }

# Prints nothing and succeeds when VENV holds torch==$2 and torchvision==$3 and every extra.
check() {
  "$1/bin/python" - "$2" "$3" <<'EOF'
import importlib.metadata as md, sys
want_torch, want_tv = sys.argv[1], sys.argv[2]
got = {}
for name in ("torch", "torchvision", "pyarrow", "psutil", "transformers", "numpy"):
    try:
        got[name] = md.version(name)
    except md.PackageNotFoundError:
        sys.exit(f"{name} is not installed")
# The distribution's own version, exactly: a local build such as 2.13.0+cpu is not the release.
if got["torch"] != want_torch:
    sys.exit(f"torch is {got['torch']}, not {want_torch}")
if got["torchvision"] != want_tv:
    sys.exit(f"torchvision is {got['torchvision']}, not {want_tv}")
import torch, torchvision  # noqa: E401
from transformers import BertConfig, BertForSequenceClassification  # noqa: F401
x = torch.randn(64, 64)
assert torch.allclose(x @ torch.eye(64), x)
torchvision.models.resnet18(weights=None)
print(f"torch {torch.__version__} (CUDA build {torch.version.cuda}), torchvision {torchvision.__version__}, "
      f"transformers {got['transformers']}, pyarrow {got['pyarrow']}")
EOF
}

mkdir -p "$DEST" || { say "cannot create $DEST"; exit 2; }
DEST=$(cd "$DEST" && pwd)
say "venvs under $DEST, from $("$PYTHON" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
say "releases: ${WANTED[*]}"

ok=() failed=() skipped=()
for release in "${WANTED[@]}"; do
  tv=${TORCHVISION[$release]:-}
  if [ -z "$tv" ]; then
    say "torch $release: not in this series (no torchvision release known for it)"
    failed+=("$release (no torchvision release known)")
    continue
  fi
  venv=$DEST/torch-$release
  if [ -f "$venv/$MARKER" ] && summary=$(check "$venv" "$release" "$tv" 2>&1); then
    say "torch $release: $venv is complete, skipped ($summary)"
    skipped+=("$release")
    continue
  fi

  rm -f "$venv/$MARKER"
  if [ -x "$venv/bin/python" ]; then
    say "torch $release: [1/3] $venv exists but is not complete: installing into it"
  elif say "torch $release: [1/3] creating $venv" && ! "$PYTHON" -m venv "$venv"; then
    say "torch $release: FAILED: cannot create the venv"
    failed+=("$release (cannot create the venv)")
    continue
  fi

  # torch===X (arbitrary equality) is the release itself and never a local build such as
  # X+cpu that a --find-links folder may offer under the same version.
  say "torch $release: [2/3] installing torch===$release torchvision===$tv ${EXTRAS[*]}"
  log=$venv/pip-install.log
  if ! "$venv/bin/python" -m pip install --log "$log" "torch===$release" "torchvision===$tv" "${EXTRAS[@]}"; then
    reason=$(grep -E ' ERROR: ' "$log" | sed -E 's/^[^ ]+ ERROR: //' | tail -n 5)
    say "torch $release: FAILED: pip could not install it:"
    printf '    %s\n' "${reason:-see $log}"
    failed+=("$release: ${reason//$'\n'/ | }")
    continue
  fi

  say "torch $release: [3/3] checking the venv"
  if ! summary=$(check "$venv" "$release" "$tv" 2>&1); then
    say "torch $release: FAILED: the installed venv does not work:"
    printf '    %s\n' "$summary" | tail -n 20
    failed+=("$release (installed, but the check failed: $(printf '%s' "$summary" | tail -n 1))")
    continue
  fi
  date -u +%FT%TZ >"$venv/$MARKER"
  say "torch $release: ready: $summary ($(du -sh "$venv" | cut -f1))"
  ok+=("$release")
done

say "summary:"
[ ${#ok[@]} -gt 0 ] && say "  installed: ${ok[*]}"
[ ${#skipped[@]} -gt 0 ] && say "  already complete: ${skipped[*]}"
for f in "${failed[@]}"; do say "  cannot be installed: torch $f"; done
[ ${#failed[@]} -eq 0 ]
