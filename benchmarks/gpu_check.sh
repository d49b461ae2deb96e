#!/usr/bin/env bash
# The GPU path of iclab, checked where CUDA is (benchmarks/README.md, "gpu_check.sh").
# Without CUDA: prints "no GPU: skipped" and exits 0. With it (at most 10 minutes): Garg et al.'s
# standard transformer (12 layers, 8 heads, width 256, d = 20, n = 40, batch 64) and one LSA
# run on cuda, their losses against the same seeds on the CPU over a few steps, and steps/s.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python}"
if [ "$("$python" -c 'import torch; print(torch.cuda.is_available())')" != "True" ]; then
    echo "no GPU: skipped"
    exit 0
fi
exec timeout 600 "$python" "$here/gpu_check.py" "$@"
