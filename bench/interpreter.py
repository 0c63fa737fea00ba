"""Interpreter speed: byocc's numpy interpreter against onnxruntime (CPU) and ONNX's own
reference evaluator, on the sample models, in one run.

    python bench/interpreter.py [--batch 8] [--repeat 5]

The interpreter is a reference, not a runtime; the goal is that it stays numpy-bound (no
per-element Python loops). onnxruntime is compiled C++ (the lower bound); ONNX's reference
evaluator is numpy-bound Python, the fair comparison: byocc / onnx.reference should be <= ~3.
"max err" is byocc's largest absolute difference from onnxruntime's outputs.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _timing import best_of  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MODELS = ["samples/small_cnn.onnx", "samples/small_encoder.onnx"]


def inputs_for(model, batch: int, seed: int = 0) -> dict:
    import numpy as np
    from onnx import TensorProto
    from onnx import helper

    rng = np.random.default_rng(seed)
    feeds = {}
    inits = {i.name for i in model.graph.initializer}
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        t = inp.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else batch for d in t.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
        if t.elem_type in (TensorProto.INT64, TensorProto.INT32):
            feeds[inp.name] = rng.integers(0, 4, size=shape).astype(dtype)
        else:
            feeds[inp.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--batch", type=int, default=8, help="value for symbolic batch dims, if any")
    args = ap.parse_args()
    import numpy as np
    import onnx

    from byocc.frontend import from_onnx
    from byocc.runtime import Interpreter

    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    from onnx.reference import ReferenceEvaluator

    print(f"{'model':<22} {'byocc ms':>9} {'onnxruntime ms':>15} {'ratio':>6} {'onnx.reference ms':>18} {'ratio':>6} {'max err':>8}")
    for rel in MODELS:
        path = os.path.join(ROOT, rel)
        model = onnx.load(path)
        feeds = inputs_for(model, args.batch)
        mod = from_onnx(model)
        interp = Interpreter(mod)
        names = [p.name_hint for p in mod["main"].params]
        ordered = [feeds[n] if n in feeds else list(feeds.values())[i] for i, n in enumerate(names)]
        out = {}

        def run_byocc():
            out["byocc"] = interp.run(ordered)

        t_byocc = best_of(run_byocc, args.repeat)
        t_ort = t_ref = float("nan")
        err = float("nan")
        if ort is not None:
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])

            def run_ort():
                out["ort"] = sess.run(None, feeds)

            t_ort = best_of(run_ort, args.repeat)
            got = out["byocc"]
            got = got[0] if isinstance(got, (list, tuple)) else got
            err = float(np.max(np.abs(np.asarray(got, dtype=np.float64) - out["ort"][0])))
        ref = ReferenceEvaluator(model)
        t_ref = best_of(lambda: ref.run(None, feeds), max(1, args.repeat // 2))
        name = os.path.basename(rel)
        print(f"{name:<22} {t_byocc * 1e3:>9.2f} {t_ort * 1e3:>15.2f} {t_byocc / t_ort:>6.1f} "
              f"{t_ref * 1e3:>18.2f} {t_byocc / t_ref:>6.2f} {err:>8.1e}")
    if ort is None:
        print("onnxruntime not installed: pip install onnxruntime for the CPU runtime comparison")
    return 0


if __name__ == "__main__":
    sys.exit(main())
