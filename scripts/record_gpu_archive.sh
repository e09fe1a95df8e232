#!/usr/bin/env bash
# Record the GPU runs the shipped site compares: an A/A pair of one stack (two runs under
# one label) and a configuration comparison (TF32 forced on for cuBLAS through
# TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, filed under its own label). A run that outlives
# LIMIT seconds is stopped with SIGTERM: it is marked interrupted, finished cases kept.
#   [LIMIT=SECONDS] [ONLY='--only W ...'] scripts/record_gpu_archive.sh OUT_DIR IMAGE_NAME LABEL
set -uo pipefail
OUT=${1:?out dir}
IMAGE=${2:?image name}
LABEL=${3:?label}
LIMIT=${LIMIT:-125}
read -r -a ONLY <<< "${ONLY:---only matmul --only resnet50_train --only bert_train}"
run() { timeout -s TERM "$LIMIT" python3 benchmarks/suite_walltime.py --suite quick --out "$OUT" -- "$@" "${ONLY[@]}" --image "$IMAGE" --time-budget 0.3; }
run --label "$LABEL"
run --label "$LABEL"
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 run --label "$LABEL-tf32-override"
