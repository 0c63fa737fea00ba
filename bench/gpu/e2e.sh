#!/usr/bin/env bash
# Whole models on the GPU, end to end, in one device call (docs/runtime.md#end-to-end-script):
# partition and build samples/mlp_fp16.relax, samples/conv2d_nhwc_fp16.relax and
# samples/small_cnn.onnx (--layout NHWC --fold-batch-norm), then for each
#   byocc run OUT --device cuda (summary JSON, outputs), the same with --cuda-graph,
#   byocc verify OUT --device cuda, byocc bench OUT (against PyTorch or onnxruntime).
# Usage on the GPU machine from the repository root (the nvidia-cutlass and lark wheels in .whl/
# when they are not installed):  bash bench/gpu/e2e.sh OUT [mlp conv cnn]
set -uo pipefail
OUT=${1:?usage: e2e.sh OUT [mlp] [conv] [cnn]}
shift
WHICH=${*:-mlp conv cnn}
if [ -d .whl ] && ! python3 -c "import lark, cutlass_library" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
W=${BYOCC_E2E_WORK:-/tmp/byocc_e2e}
mkdir -p "$OUT" "$W"
B="python3 -m byocc"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 - <<'PY'
import importlib
for name in ("cupy", "torch", "onnxruntime"):
    try:
        m = importlib.import_module(name)
        extra = m.get_available_providers() if name == "onnxruntime" else ""
        print(name, m.__version__, extra)
    except Exception as exc:  # noqa: BLE001
        print(name, "missing:", exc)
PY

declare -A SRC=([mlp]=samples/mlp_fp16.relax [conv]=samples/conv2d_nhwc_fp16.relax [cnn]=samples/small_cnn.onnx)
declare -A OPTS=([mlp]="" [conv]="" [cnn]="--layout NHWC --fold-batch-norm")
declare -A BENCH=([mlp]="--reference bench/gpu/references.py:mlp_fp16"
                  [conv]="--reference bench/gpu/references.py:conv2d_nhwc_fp16"
                  [cnn]="--onnx samples/small_cnn.onnx")
rc=0
ITERS=${BYOCC_E2E_ITERS:-30}
echo "=== partition + build ($(date +%T))"
for c in $WHICH; do
    rm -rf "$W/$c"
    $B partition "${SRC[$c]}" --backend cutlass ${OPTS[$c]} -o "$W/$c" > "$OUT/$c.partition.log" 2>&1 &
done
wait
start=$(date +%s)
for c in $WHICH; do  # the builds share the 16 cores
    ( timeout 150 $B build "$W/$c" -j 6 > "$OUT/$c.build.log" 2>&1; echo $? > "$W/$c.rc" ) &
done
wait
echo "builds done in $(( $(date +%s) - start )) s"
# run (summary JSON, outputs), run --cuda-graph and verify: the cases side by side
for c in $WHICH; do
    if [ "$(cat "$W/$c.rc")" != 0 ]; then continue; fi
    (
        timeout 90 $B run "$W/$c" --device cuda --random-inputs 0 --summary "$OUT/$c.run.json" -o "$OUT/$c.out.npz"
        echo "[run rc $?]"
        timeout 60 $B run "$W/$c" --device cuda --random-inputs 0 --cuda-graph
        echo "[run --cuda-graph rc $?]"
        timeout 90 $B verify "$W/$c" --device cuda --trials 2
        echo "[verify rc $?]"
    ) > "$OUT/$c.run.log" 2>&1 &
done
wait
for c in $WHICH; do
    echo "=== $c: ${SRC[$c]} ${OPTS[$c]}"
    if [ "$(cat "$W/$c.rc")" != 0 ]; then
        echo "build failed (rc $(cat "$W/$c.rc")):"; tail -20 "$OUT/$c.build.log"; rc=1; continue
    fi
    tail -1 "$OUT/$c.build.log"
    cat "$OUT/$c.run.log"
    grep -q "rc [1-9]" "$OUT/$c.run.log" && rc=1
done
# bench: one case at a time (the GPU to itself)
for c in $WHICH; do
    if [ "$(cat "$W/$c.rc")" != 0 ]; then continue; fi
    echo "=== bench $c ($(date +%T))"
    timeout 90 $B bench "$W/$c" --warmup 5 --iters "$ITERS" ${BENCH[$c]} --json 2> "$OUT/$c.bench.txt" > "$OUT/$c.bench.json" || rc=1
    cat "$OUT/$c.bench.txt"
done
echo "=== done ($(date +%T))"
exit $rc
