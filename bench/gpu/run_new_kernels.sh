#!/usr/bin/env bash
# One device call for the kernels added with the codegen skeleton: the generated norm,
# conv2d and attention functions, built with `byocc build` and called through the native
# runner (each script checks against float64 and times against PyTorch under CUDA graphs).
# Usage on the GPU machine, from the repository root, with the nvidia-cutlass and lark
# wheels in .whl/ (bench/gpu/NOTES.md):  bash bench/gpu/run_new_kernels.sh "$OUT" [norm conv attn]
set -uo pipefail
OUT=${1:?usage: run_new_kernels.sh OUT [norm] [conv] [attn]}
shift
WHICH=${*:-norm conv attn}
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1
mkdir -p "$OUT" /tmp/byocc_gpu
rc=0
for name in $WHICH; do
    echo "=== $name ($(date +%T))"
    case $name in
        norm) timeout 420 python3 bench/gpu/norm_e2e.py --out /tmp/byocc_gpu/norm --jobs 16 || rc=1
              cp /tmp/byocc_gpu/norm/norm_e2e.json /tmp/byocc_gpu/norm/norm_e2e.md "$OUT"/ 2>/dev/null ;;
        conv) timeout 540 python3 bench/gpu/conv_bench.py --out /tmp/byocc_gpu/conv --jobs 16 || rc=1
              cp /tmp/byocc_gpu/conv/results.json "$OUT"/conv_results.json 2>/dev/null
              tail -c 200000 /tmp/byocc_gpu/conv/build.log > "$OUT"/conv_build.log 2>/dev/null ;;
        # writes attn_results.json / attn_table.md into $OUT after every case (a timeout keeps them)
        attn) BYOCC_BENCH_WORK=/tmp/byocc_gpu timeout 540 python3 bench/gpu/attn_bench.py --out "$OUT" -j 16 --quick \
                  --time-budget ${ATTN_TIME_BUDGET:-250} --compile-budget ${ATTN_COMPILE_BUDGET:-60} --only "${ATTN_ONLY:-}" || rc=1
              cp /tmp/byocc_gpu/attn/out/manifest.json "$OUT"/attn_manifest.json 2>/dev/null ;;
    esac
done
exit $rc
