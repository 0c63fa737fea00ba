"""Device memory a partitioned ResNet-50 plans, measured without a GPU.

    python bench/memory_plan.py [--batch 32] [--work DIR] [--model M.onnx]

Writes a ResNet-50-shaped ONNX graph (torchvision's layers with batch norm already folded:
conv + bias, ReLU, the residual adds, the 3x3/2 max pool, the global pool and the classifier;
random weights; opset 17, fp32; or reads ``--model``), partitions it as
``bench/gpu/e2e_models.sh`` does (``--dtype float16 --layout NHWC --backend cutlass --path
merge``), and prints what ``byocc run --device cuda`` would plan before it runs anything:
each built function's scratch (the manifest's ``scratch_bytes``), the run's arena
(``byocc.runtime.memplan.plan_function``: every native call's outputs and static scratch,
reused after their last use), the constants and the input. The peak a GPU run measures is
about arena + constants + input + the host operators' results alive at once (which CuPy's
pool holds outside the arena).

Needs onnx (the ``onnx`` extra's dependency), no torch and no GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (width, blocks, stride of the first block) of ResNet-50's four stages.
STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))


def resnet50_onnx(batch: int, path: Path, seed: int = 0) -> None:
    """ResNet-50 v1.5 (the stride on the 3x3 conv) as conv + bias / ReLU / Add nodes."""
    import numpy as np
    import onnx
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    count = 0

    def fresh(prefix: str) -> str:
        nonlocal count
        count += 1
        return f"{prefix}{count}"

    def conv(x: str, cin: int, cout: int, k: int, stride: int, relu: bool = True) -> str:
        w, b, y = fresh("w"), fresh("b"), fresh("conv")
        fan_in = cin * k * k
        inits.append(numpy_helper.from_array((rng.standard_normal((cout, cin, k, k)) / np.sqrt(fan_in))
                                             .astype(np.float32), w))
        inits.append(numpy_helper.from_array((rng.standard_normal(cout) * 0.01).astype(np.float32), b))
        nodes.append(helper.make_node("Conv", [x, w, b], [y], kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[k // 2] * 4))
        if not relu:
            return y
        r = fresh("relu")
        nodes.append(helper.make_node("Relu", [y], [r]))
        return r

    x = conv("x", 3, 64, 7, 2)
    pooled = fresh("pool")
    nodes.append(helper.make_node("MaxPool", [x], [pooled], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4))
    x, cin = pooled, 64
    for width, blocks, stride in STAGES:
        for i in range(blocks):
            s = stride if i == 0 else 1
            y = conv(conv(conv(x, cin, width, 1, 1), width, width, 3, s), width, width * 4, 1, 1, relu=False)
            shortcut = conv(x, cin, width * 4, 1, s, relu=False) if i == 0 else x
            added, r = fresh("add"), fresh("relu")
            nodes += [helper.make_node("Add", [y, shortcut], [added]), helper.make_node("Relu", [added], [r])]
            x, cin = r, width * 4
    gap, flat = fresh("gap"), fresh("flat")
    nodes += [helper.make_node("GlobalAveragePool", [x], [gap]), helper.make_node("Flatten", [gap], [flat])]
    inits.append(numpy_helper.from_array((rng.standard_normal((1000, 2048)) * 0.02).astype(np.float32), "fc_w"))
    inits.append(numpy_helper.from_array(np.zeros(1000, np.float32), "fc_b"))
    nodes.append(helper.make_node("Gemm", [flat, "fc_w", "fc_b"], ["logits"], transB=1))
    graph = helper.make_graph(nodes, "resnet50", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                 [batch, 3, 224, 224])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--work", default=None, help="folder for the model and the partition (default: a temp dir)")
    ap.add_argument("--model", default=None, help="an ONNX model instead of the generated ResNet-50")
    args = ap.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="byocc_memplan_"))
    work.mkdir(parents=True, exist_ok=True)
    model = Path(args.model) if args.model else work / f"resnet50_b{args.batch}.onnx"
    if not args.model:
        resnet50_onnx(args.batch, model)
    out = work / model.stem
    cmd = [sys.executable, "-m", "byocc", "partition", str(model), "--dtype", "float16", "--layout", "NHWC",
           "--backend", "cutlass", "--path", "merge", "-o", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if p.returncode != 0:
        print(p.stderr, file=sys.stderr)
        return 1
    from byocc.cli.device_run import codegen_module
    from byocc.runtime.memplan import plan_function

    manifest = json.loads((out / "manifest.json").read_text())
    scratch = {str(f["symbol"]): int(f["scratch_bytes"]) for f in manifest["functions"]
               if isinstance(f.get("scratch_bytes"), int) and f["scratch_bytes"] > 0}
    mod = codegen_module(str(out))
    plan = plan_function(mod["main"], scratch_bytes=scratch)
    import numpy as np

    with np.load(out / f"{model.stem}.codegen.npz") as npz:  # the run's constants (uploaded once)
        constants = sum(npz[k].nbytes for k in npz.files)
    mib = 2 ** 20
    print(f"{model.name}: {len(manifest['functions'])} built functions")
    for f in manifest["functions"]:
        steps = len(f.get("steps", ()))
        print(f"  {str(f['symbol'])[:60]:60} {steps:3d} steps  scratch {f.get('scratch_bytes', 0) / mib:8.1f} MiB")
    d = plan.as_dict()
    print(f"arena {d['arena_bytes'] / mib:.1f} MiB (most alive at once {d['live_peak_bytes'] / mib:.1f}; "
          f"without reuse {d['unplanned_bytes'] / mib:.1f}), {d['buffers']} buffers, {d['scratch_buffers']} scratch")
    print(f"constants {constants / mib:.1f} MiB; input {args.batch * 3 * 224 * 224 * 4 / mib:.1f} MiB (fp32)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
