#!/usr/bin/env bash
# Record the GPU runs the shipped site compares, one after another:
#   1. LABEL, the full suite (its wall time is the suite's published figure);
#   2. LABEL-tf32-override: the same stack with TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 (TF32 on
#      by default for cuBLAS), on the cases TF32 can move: FP32 training and inference
#      (the matmul workload sets TF32 explicitly per case, so the override cannot move it);
#   3. LABEL again, the process-replicated cases of the full suite: with run 1, an A/A pair
#      (`reporter compare LABEL@RUN_1 LABEL@RUN_3`).
# With DEADLINE (epoch seconds), run 3 is stopped with SIGTERM at that time: it is marked
# interrupted and keeps every case that finished. Each step's wall time goes to stdout.
#   [DEADLINE=EPOCH] [AA_ONLY='--only W ...'] scripts/record_gpu_archive.sh OUT_DIR IMAGE LABEL
set -uo pipefail
OUT=${1:?out dir}
IMAGE=${2:?image name}
LABEL=${3:?label}
read -r -a AA_ONLY <<< "${AA_ONLY:---only matmul --only conv2d --only memory --only resnet50_train --only bert_train --only inference}"
TF32_ONLY=(--only resnet50_train --only bert_train --only 'amp*precision=fp32*' --only 'inference*precision=fp32*')
cd "$(dirname "$0")/.."

record() { python3 benchmarks/suite_walltime.py --suite full --out "$OUT" -- --image "$IMAGE" "$@"; }

echo "== $(date -u +%T) full suite, $LABEL"
record --label "$LABEL"
echo "== $(date -u +%T) TF32 override, $LABEL-tf32-override"
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 record --label "$LABEL-tf32-override" "${TF32_ONLY[@]}"
echo "== $(date -u +%T) second run of $LABEL (A/A)"
if [[ -n ${DEADLINE:-} ]]; then
  left=$((DEADLINE - $(date +%s)))
  if ((left < 60)); then echo "no time left for the A/A run"; exit 0; fi
  # suite_walltime forwards SIGTERM to nothing: stop the collector itself, then its wrapper.
  python3 -m collector run --suite full --out "$OUT" --no-progress --image "$IMAGE" --label "$LABEL" "${AA_ONLY[@]}" &
  pid=$!
  ( sleep "$left"; kill -TERM "$pid" 2>/dev/null ) &
  watchdog=$!
  t0=$(date +%s); wait "$pid"; rc=$?; kill "$watchdog" 2>/dev/null
  echo "A/A run exited $rc after $(( $(date +%s) - t0 )) s"
else
  record --label "$LABEL" "${AA_ONLY[@]}"
fi
echo "== $(date -u +%T) done"
