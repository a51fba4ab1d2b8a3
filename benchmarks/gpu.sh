#!/usr/bin/env bash
# The JAX env's figures on a GPU (issue 35), in one run: the pgx user's loops at B = 4,096, 65,536 and 1,048,576
# with and without the observation beside the numpy engine (`bench --jax --device gpu`), the mctx agent's
# decisions/s at B = 1,024, and train-az's iterations/s (the first iteration, which compiles, left out).
#
#   pip install -U "jax[cuda12]"     # jax's CUDA build, after the project's jax and mctx extras
#   benchmarks/gpu.sh                # prints the card, then every figure
#
# Settings (environment): DEVICE (gpu; cpu runs the same script on the CPU, e.g. to try it with tiny sizes),
# SIZES, BENCH_SECONDS, MCTX_BATCH, AZ_ITERATIONS, AZ_GAMES, AZ_STEPS, AZ_SIMULATIONS, STRATEGIC_RESERVE (the
# command, default strategic-reserve) and PYTHON (default python3).
set -euo pipefail

command=${STRATEGIC_RESERVE:-strategic-reserve}
device=${DEVICE:-gpu}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ "$device" = gpu ]; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
fi
# shellcheck disable=SC2086  # SIZES is a list of batch sizes
$command bench --jax --device "$device" --batch-sizes ${SIZES:-4096 65536 1048576} --seconds "${BENCH_SECONDS:-2}" \
    --mctx "${MCTX_BATCH:-1024}"

JAX_PLATFORMS=${device/gpu/cuda} $command train-az --out "$work/az" --iterations "${AZ_ITERATIONS:-6}" \
    --games "${AZ_GAMES:-1024}" --steps "${AZ_STEPS:-32}" --simulations "${AZ_SIMULATIONS:-32}" > "$work/az.log"
"${PYTHON:-python3}" - "$work/az/progress.jsonl" <<'PY'
import json, sys

rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if '"seconds"' in line]
later = [row["seconds"] for row in rows[1:]]  # the first iteration compiles
print(f"train-az: {len(rows)} iterations, the first {rows[0]['seconds']:.1f} s (compile), "
      f"then {len(later) / sum(later):.3f} iterations/s" if later else "train-az: one iteration only")
PY
