#!/usr/bin/env bash
# One batched round of GPU measurements, run from the repository root:
#     [STEPS="doctor tf32 fidelity standard"] [DEADLINE_S=540] [SUITE=standard] scripts/gpu_round.sh OUT_DIR
#     [TF32_ONLY='--only PATTERN ...'] (the cases of the tf32 step)
#     [FIDELITY_ONLY='--only PATTERN ...'] (the cases of the fidelity step; default: all of $SUITE)
# Steps (in the order given by STEPS; each guarded, so one failing step loses nothing else):
#   doctor    python -m collector doctor                      -> OUT_DIR/doctor.txt
#   tf32      the stack at its defaults and with NVIDIA_TF32_OVERRIDE=0, interleaved in one
#             invocation (--python twice, --env on the second) over the float32 regimes
#             (fp32, fp32-strict, tf32) of matmul and conv2d  -> OUT_DIR/tf32.log
#   fidelity  benchmarks/fidelity.py against triton's do_bench -> OUT_DIR/fidelity.{log,json}
#   standard  the $SUITE suite with its wall time, default processes -> OUT_DIR/standard.log
#   aa        a run of the microbenchmarks of $SUITE (an A/A pair with "standard", or with
#             another aa: STEPS="aa aa"; logs aa1.log, aa2.log, ...)
#   statecost benchmarks/gpu_state_cost.py: one GPU-state reading's time -> OUT_DIR/statecost.txt
#   noise     benchmarks/tiny_kernel_noise.py: short kernels' blocks with and without the
#             sampler and the host's lead -> OUT_DIR/noise.txt
#   baseline  the $SUITE suite, default processes, with another version of the collector: the
#             package folder's parent in BASELINE (for example an older commit's collector/,
#             copied, with its runformat/ where it has one), filed under $BASELINE_LABEL           -> OUT_DIR/baseline.log
#   resume    finish the runs of an earlier round that its deadline cut: every run in the
#             runs.tar.gz named by RESUME_TAR goes back under this round's runs/ and is resumed
#             (collector run --resume) by the collector in RESUME_WITH (a folder holding
#             collector/, for a baseline's runs; default: this checkout's)
#                                                              -> OUT_DIR/resume-RUN_ID.log
#   smoke     the smoke suite (the CPU check of this script)
# Every run is recorded under a scratch runs/ folder and archived as OUT_DIR/runs.tar.gz
# (paths runs/<label>/<run_id>/...). A step still running at DEADLINE_S seconds after the
# start gets SIGTERM: the collector marks its run interrupted and keeps every finished case.
# OUT_DIR/summary.txt has one line per step: its exit status and wall time.
set -u
OUT=${1:?usage: scripts/gpu_round.sh OUT_DIR}
STEPS=${STEPS:-doctor tf32 fidelity standard}
DEADLINE_S=${DEADLINE_S:-540}
SUITE=${SUITE:-standard}
GPU_TAG=${GPU_TAG:-h200}
PY=${PYTHON:-$(command -v python3 || command -v python)}
[[ $PY == */* ]] && PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")"  # steps may change folder
# The float32 regimes of matmul (two sizes) and every conv2d case of fp32, fp32-strict, tf32.
read -r -a TF32_ONLY <<< "${TF32_ONLY:---only matmul*dtype=fp32*,n=1024* --only matmul*dtype=fp32*,n=4096* --only matmul*dtype=tf32,n=1024* --only matmul*dtype=tf32,n=4096* --only conv2d*dtype=fp32* --only conv2d*dtype=tf32*}"
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.." || exit 2
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
START=$(date +%s)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-round.XXXXXX")
RUNS="$WORK/runs"
mkdir -p "$RUNS"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"

TORCH=$("$PY" -c 'import torch; print(torch.__version__.replace("+", "-"))' 2>/dev/null || echo unknown)
BASE="$GPU_TAG-torch-$TORCH"

left() { echo $((START + DEADLINE_S - $(date +%s))); }

archive() {  # after every step, so a round cut short still brings back what finished
  tar -czf "$OUT/runs.tar.gz.tmp" -C "$WORK" runs && mv "$OUT/runs.tar.gz.tmp" "$OUT/runs.tar.gz"
}

# step NAME LOG CMD...: run CMD with output to LOG (and its tail to stdout), stopped with
# SIGTERM at the deadline (then SIGKILL 20 s later), its status and wall time in the summary.
step() {
  local name=$1 log=$2
  shift 2
  local budget
  budget=$(left)
  if ((budget < 15)); then
    echo "$name: skipped (deadline: ${budget}s left)" | tee -a "$SUMMARY"
    return 0
  fi
  echo "== $(date -u +%T) $name (${budget}s left)"
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout -s TERM -k 20 "$budget" "$@" > "$log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  tail -n 25 "$log"
  printf '%s: exit %s, wall %.1f s%s\n' "$name" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
    "$( ((rc == 124)) && echo ' (stopped at the deadline; finished cases kept)')" | tee -a "$SUMMARY"
  archive
  return 0
}



for s in $STEPS; do
  case $s in
    doctor)
      step doctor "$OUT/doctor.txt" env COLUMNS=160 "$PY" -m collector doctor --out "$RUNS" --suite "$SUITE"
      ;;
    tf32)
      step tf32 "$OUT/tf32.log" "$PY" -m collector run --suite "$SUITE" --out "$RUNS" --no-progress --interleave \
        "${TF32_ONLY[@]}" \
        --python "$PY" --label "$BASE-defaults" \
        --python "$PY" --env NVIDIA_TF32_OVERRIDE=0 --label "$BASE-tf32-override-0"
      ;;
    fidelity)
      read -r -a FIDELITY_ARGS <<< "${FIDELITY_ONLY:-}"
      step fidelity "$OUT/fidelity.log" "$PY" benchmarks/fidelity.py --suite "$SUITE" --json "$OUT/fidelity.json" \
        "${FIDELITY_ARGS[@]}"
      ;;
    standard)
      step standard "$OUT/standard.log" "$PY" -m collector run --suite "$SUITE" --out "$RUNS" --no-progress --label "$BASE"
      ;;
    aa)
      AA=$((${AA:-0} + 1))
      step aa "$OUT/aa$AA.log" "$PY" -m collector run --suite "$SUITE" --out "$RUNS" --no-progress --label "$BASE" \
        --only matmul --only conv2d --only memory --only cpu_vs_gpu
      ;;
    statecost)
      step statecost "$OUT/statecost.txt" "$PY" benchmarks/gpu_state_cost.py --reads 200
      ;;
    noise)
      step noise "$OUT/noise.txt" "$PY" benchmarks/tiny_kernel_noise.py --rounds 3
      ;;
    baseline)
      if [[ ! -f ${BASELINE:-}/collector/__main__.py ]]; then
        echo "baseline: BASELINE must name a folder holding a collector/ package (got '${BASELINE:-}')" | tee -a "$SUMMARY"
        continue
      fi
      step baseline "$OUT/baseline.log" env -C "$BASELINE" "$PY" -m collector run --suite "$SUITE" --out "$RUNS" \
        --no-progress --label "${BASELINE_LABEL:-$BASE-baseline}"
      ;;
    resume)
      if [[ ! -f ${RESUME_TAR:-} ]] || ! tar -xzf "$RESUME_TAR" -C "$WORK"; then
        echo "resume: RESUME_TAR must name the runs.tar.gz of an earlier round (got '${RESUME_TAR:-}')" | tee -a "$SUMMARY"
        continue
      fi
      for run in "$RUNS"/*/*/; do
        [[ -d $run ]] || { echo "resume: $RESUME_TAR holds no run" | tee -a "$SUMMARY"; break; }
        step resume "$OUT/resume-$(basename "$run").log" env -C "${RESUME_WITH:-$PWD}" "$PY" -m collector run \
          --resume "${run%/}" --no-progress
      done
      ;;
    smoke)
      step smoke "$OUT/smoke.log" "$PY" -m collector run --suite smoke --out "$RUNS" --no-progress --label "$BASE-smoke" \
        --only matmul --only conv2d --processes 2
      ;;
    *)
      echo "$s: unknown step (doctor, tf32, fidelity, standard, aa, statecost, noise, baseline, resume, smoke)" | tee -a "$SUMMARY"
      ;;
  esac
done
archive
echo "== $(date -u +%T) done in $(($(date +%s) - START)) s; runs in $OUT/runs.tar.gz" | tee -a "$SUMMARY"
rm -rf "$WORK"
