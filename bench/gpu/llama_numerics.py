"""The Llama layer's fp16 pipeline against its fp32 model, on the host interpreter.

    PYTHONPATH=. python bench/gpu/llama_numerics.py models/llama_block.onnx [--seed 0]

imports the ONNX model (fp32), runs what ``byocc partition --dtype float16 --backend
cutlass --path merge`` makes of it (RecomposeOps, the cutlass rewrites, ToMixedPrecision,
the rms_norm lowering, partitioning; the offloaded functions run as ordinary calls) and the
fp32 model on the same random input, and prints the max/mean absolute and relative error,
and which heavy ops the partitioned module offloads. Small models only (the interpreter
runs in float64 numpy): ``export_models.py --llama-hidden 512 --llama-ffn 1024 --llama-seq 64``.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from byocc.backends.registry import get_patterns_with_prefix
    from byocc.cli.options import apply_frontend
    from byocc.frontend import from_onnx
    from byocc.runtime.interpreter import run_module
    from byocc.transform.pipeline import partition

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    mod32 = from_onnx(args.model)
    x_si = mod32["main"].params[0].struct_info
    x = np.random.default_rng(args.seed).standard_normal(tuple(x_si.shape)).astype("float32")
    mod16 = apply_frontend(mod32, ("cutlass",), (False, None, None), None, "float16", "half")
    part = partition(mod16, get_patterns_with_prefix("cutlass"), path="merge")
    ref = np.asarray(run_module(mod32, [x]), dtype="float64")
    got = np.asarray(run_module(part, [x]), dtype="float64")
    err = np.abs(got - ref)
    rel = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    print(f"{args.model}: output {ref.shape}, |ref| max {np.abs(ref).max():.3g}; fp16 pipeline vs fp32 model: "
          f"max abs err {err.max():.3g}, mean abs err {err.mean():.3g}, rel (Frobenius) err {rel:.3g}")
    text = part.script()
    print(f"host R.repeat: {text.count('R.repeat(')}, rms_norm prim_funcs called: "
          f"{text.count('R.call_tir(cls.rms_norm')}, Composite cutlass.rms_norm: {text.count('cutlass.rms_norm')}")
    return 0 if np.isfinite(err).all() else 1


if __name__ == "__main__":
    sys.exit(main())
