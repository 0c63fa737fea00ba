#!/usr/bin/env bash
# Whole models end to end on the GPU (issue 21), in one device call: ResNet-50 (torchvision,
# batch 32 and batch 1), BERT-base (batch 8, seq 512) and a Llama-style decoder layer (batch 1,
# seq 2048, GQA, RMSNorm, SiLU-gated MLP), random weights from a fixed seed:
#
#   prep       torch fp32 model -> ONNX opset 17 (fp32), fixed inputs, onnxruntime (CPU) outputs
#   partition  byocc partition M.onnx --dtype float16 --backend cutlass --path merge
#              (ResNet: --layout NHWC --fold-batch-norm) -o W/M --explain-json
#   build      byocc build W/M -j $E2E_JOBS (the four builds side by side)
#   run        byocc run W/M --device cuda --cuda-graph --inputs ... -o ... --summary
#              (without --cuda-graph when the capture fails); compare: its output against
#              onnxruntime's, float16 tolerance of verify --device cuda
#   bench      byocc bench W/M --reference bench/gpu/references.py:REF --json (GPU lock)
#   torch      PyTorch fp16 eager / channels-last / torch.compile, eager and CUDA graph
#              (bench/gpu/e2e_models.py torch; compiles while the builds run, times after them)
#   verify     byocc verify W/M --device cuda --trials 1 --against W/M.onnx (the fp32 export)
#   table      one table, W/e2e_models.json copied to OUT
#
# Each stage logs to OUT/M.STAGE.log under its own timeout (and the overall budget
# E2E_BUDGET seconds from the start); a failing stage skips only what needs its result.
#
# Usage (GPU machine, repository root):  bash bench/gpu/e2e_models.sh OUT [MODEL...]
#   MODEL: resnet50_b32 resnet50_b1 bert llama (default: all)
#   --dry-run (or E2E_SMALL=1 E2E_DEVICE=cpu): small shapes, no build, byocc run on the CPU
#   interpreter, torch on the CPU, no bench/verify: checks the stages without a GPU.
# Environment: E2E_BUDGET (460 s), E2E_JOBS (5 heavy units per build: the four builds run
#   side by side, 20 CUTLASS units of ~3.7 GB at most), E2E_ARCH (build only
#   this arch, e.g. sm_90a; default both), E2E_ITERS (20), E2E_WARMUP (3), E2E_SEED (0),
#   E2E_COMPILE (1; 0 skips torch.compile), E2E_VERIFY (1; 0 skips verify --device cuda), E2E_CHECK_EXPORT (0; 1 also checks torch fp32 on
#   the CPU against onnxruntime), BYOCC_E2E_WORK (work folder, default /tmp/byocc_e2e_models).
set -uo pipefail
DRY=0
ARGS=()
for a in "$@"; do
    if [ "$a" = "--dry-run" ]; then DRY=1; else ARGS+=("$a"); fi
done
set -- "${ARGS[@]}"
OUT=${1:?usage: e2e_models.sh OUT [--dry-run] [resnet50_b32 resnet50_b1 bert llama]}
shift
MODELS=${*:-resnet50_b32 resnet50_b1 bert llama}
if [ "$DRY" = 1 ]; then export E2E_SMALL=1 E2E_DEVICE=cpu; fi
export E2E_SMALL=${E2E_SMALL:-0} E2E_DEVICE=${E2E_DEVICE:-cuda} E2E_SEED=${E2E_SEED:-0}
DEVICE=$E2E_DEVICE
START=$(date +%s)
BUDGET=${E2E_BUDGET:-460}
DEADLINE=$((START + BUDGET))
JOBS=${E2E_JOBS:-5}
ITERS=${E2E_ITERS:-20}
WARMUP=${E2E_WARMUP:-3}
if [ -d .whl ] && ! python3 -c "import lark, cutlass_library" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
W=${BYOCC_E2E_WORK:-/tmp/byocc_e2e_models}
mkdir -p "$OUT" "$W"
OUT=$(cd "$OUT" && pwd)
rm -f "$W"/go "$W"/*.stages "$W"/*.json "$W"/*.npz
B="python3 -m byocc"
D="python3 bench/gpu/e2e_models.py"
LOG="$OUT/stages.txt"
: > "$LOG"
say() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$LOG"; }

# stage MODEL NAME TIMEOUT CMD...: run CMD under min(TIMEOUT, time left), log to OUT/MODEL.NAME.log,
# record "NAME rc seconds" in W/MODEL.stages; returns CMD's exit code (124: timed out, 125: no time left)
stage() {
    local m=$1 name=$2 t=$3 left s rc
    shift 3
    left=$((DEADLINE - $(date +%s)))
    if [ "$left" -lt 5 ]; then
        say "$m $name: skipped (budget spent)"; echo "$name 125 0" >> "$W/$m.stages"; return 125
    fi
    [ "$t" -gt "$left" ] && t=$left
    s=$(date +%s)
    timeout -k 5 "$t" "$@" > "$OUT/$m.$name.log" 2>&1
    rc=$?
    echo "$name $rc $(( $(date +%s) - s ))" >> "$W/$m.stages"
    if [ "$rc" = 124 ]; then say "$m $name: TIMED OUT after $t s"; else say "$m $name: rc $rc in $(( $(date +%s) - s )) s"; fi
    return $rc
}

ref_of() {
    case $1 in
        resnet50_b32) echo resnet50_b32_fp16_cl ;;
        resnet50_b1) echo resnet50_b1_fp16_cl ;;
        bert) echo bert_fp16 ;;
        llama) echo llama_fp16 ;;
    esac
}
opts_of() {
    case $1 in
        resnet50_*) echo "--layout NHWC --fold-batch-norm" ;;
        *) echo "" ;;
    esac
}

say "e2e_models: models [$MODELS], device $DEVICE, small $E2E_SMALL, budget ${BUDGET}s, jobs $JOBS, work $W"
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
    python3 - <<'PY'
import importlib
for name in ("cupy", "torch", "torchvision", "onnx", "onnxruntime", "cutlass_library", "lark"):
    try:
        m = importlib.import_module(name)
        print(name, getattr(m, "__version__", "?"))
    except Exception as exc:  # noqa: BLE001
        print(name, "missing:", exc)
PY
    nproc; free -g | head -2
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# torch references: start at once (the compile warm-up overlaps the builds), time after $W/go
declare -A TPID=()
for m in $MODELS; do
    if [ "$DEVICE" = cpu ] && [ "${E2E_TORCH:-1}" = 0 ]; then break; fi
    ( stage "$m" torch "$((BUDGET - 20))" $D torch "$m" "$W" --go "$W/go" --lock "$W/gpu.lock" \
          --warmup "$WARMUP" --iters "$ITERS" --max-wait "$BUDGET" ) &
    TPID[$m]=$!
done

# per model: prep -> partition -> build -> run -> compare, the models side by side
chain() {
    local m=$1 runopt
    stage "$m" prep 200 $D prep "$m" "$W" || return
    rm -rf "${W:?}/$m"
    # shellcheck disable=SC2046
    stage "$m" partition 200 $B partition "$W/$m.onnx" --dtype float16 $(opts_of "$m") --backend cutlass \
        --path merge -o "$W/$m" --explain-json "$OUT/$m.explain.json" || return
    if [ "$DEVICE" != cpu ]; then
        # shellcheck disable=SC2086
        stage "$m" build 360 $B build "$W/$m" -j "$JOBS" ${E2E_ARCH:+--arch $E2E_ARCH} || return
        if ! stage "$m" run 150 $B run "$W/$m" --device "$DEVICE" --cuda-graph --inputs "$W/$m.inputs.npz" \
                -o "$W/$m.byocc.npz" --summary "$W/$m.run.json"; then
            stage "$m" run_eager 150 $B run "$W/$m" --device "$DEVICE" --inputs "$W/$m.inputs.npz" \
                -o "$W/$m.byocc.npz" --summary "$W/$m.run.json" || return
        fi
    else
        stage "$m" run_cpu 300 $B run "$W/$m" --inputs "$W/$m.inputs.npz" -o "$W/$m.byocc.npz" || return
    fi
    stage "$m" compare 120 $D compare "$m" "$W"
}
for m in $MODELS; do chain "$m" & done
# wait for the chains (not the torch processes)
for job in $(jobs -p); do
    skip=0
    for p in "${TPID[@]}"; do [ "$job" = "$p" ] && skip=1; done
    [ "$skip" = 0 ] && wait "$job"
done
say "chains done"
touch "$W/go"

LOCK=(flock "$W/gpu.lock")
command -v flock > /dev/null || { LOCK=(); say "no flock: byocc bench may overlap the torch timings"; }
if [ "$DEVICE" != cpu ]; then
    for m in $MODELS; do
        [ -f "$W/$m/lib/libbyocc_$m.so" ] || { say "$m bench: skipped (no library)"; continue; }
        # stdout (the JSON) to W/M.bench.json, stderr (the table) to the log
        stage "$m" bench 150 "${LOCK[@]}" sh -c '"$@" > "$0"' "$W/$m.bench.json" $B bench "$W/$m" \
            --inputs "$W/$m.inputs.npz" --reference "bench/gpu/references.py:$(ref_of "$m")" \
            --warmup "$WARMUP" --iters "$ITERS" --json
    done
fi
for m in "${!TPID[@]}"; do wait "${TPID[$m]}"; done
say "torch done"

if [ "$DEVICE" != cpu ] && [ "${E2E_VERIFY:-1}" != 0 ]; then
    for m in $MODELS; do
        [ -f "$W/$m/lib/libbyocc_$m.so" ] || continue
        # against the fp32 ONNX export itself (the float16 build at float16's tolerance)
        stage "$m" verify 200 $B verify "$W/$m" --device "$DEVICE" --trials 1 --against "$W/$m.onnx" &
    done
    wait
fi

python3 - "$W" $MODELS <<'PY'
import json, os, sys
w = sys.argv[1]
for m in sys.argv[2:]:
    rec = {}
    try:
        for line in open(os.path.join(w, f"{m}.stages")):
            name, rc, secs = line.split()
            rec[name] = {"rc": int(rc), "s": int(secs)}
    except OSError:
        pass
    json.dump(rec, open(os.path.join(w, f"{m}.stages.json"), "w"), indent=2)
PY
$D table "$W" "$OUT" $MODELS 2>&1 | tee "$OUT/table.log"
for m in $MODELS; do
    for f in prep torch run bench compare stages; do
        [ -f "$W/$m.$f.json" ] && cp "$W/$m.$f.json" "$OUT/"
    done
done
say "done"
