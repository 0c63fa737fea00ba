"""A Llama-style RMSNorm + projection in fp16, as TVM hands it to CUTLASS: ``R.nn.rms_norm``
lowered by LegalizeOps to a ``@T.prim_func`` called through ``R.call_tir`` (the form the
``cutlass.rms_norm`` pattern matches), then a matmul. ``.relax`` files refuse TIR, so this
sample is TVMScript in Python, run on byocc (only the imports differ from TVM):

    python samples/rms_norm_fp16.py                         # the partitioned module
    python samples/rms_norm_fp16.py -o out/ [--path merge]  # what ``byocc partition -o`` writes

The generated rms_norm step takes its epsilon (1e-6 here) from the prim_func's text
(``manifest.json``: ``"epsilon_source": "prim_func"``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from byocc import relax  # was: from tvm import relax
from byocc.relax.backend.cuda.cutlass import partition_for_cutlass
from byocc.script import ir as I  # was: from tvm.script import ir as I, relax as R, tir as T
from byocc.script import relax as R
from byocc.script import tirx as T


@I.ir_module
class Module:
    @T.prim_func(private=True)
    def rms_norm(A: T.Buffer((T.int64(2), T.int64(16), T.int64(256)), "float16"),
                 B: T.Buffer((T.int64(256),), "float16"),
                 rms_norm: T.Buffer((T.int64(2), T.int64(16), T.int64(256)), "float16")):
        T.func_attr({"tir.noalias": True})
        Ared_temp = T.alloc_buffer((T.int64(2), T.int64(16)))
        for bsz, i, k in T.grid(T.int64(2), T.int64(16), T.int64(256)):
            with T.sblock("Ared_temp"):
                v_bsz, v_i, v_k = T.axis.remap("SSR", [bsz, i, k])
                with T.init():
                    Ared_temp[v_bsz, v_i] = T.float32(0.0)
                Ared_temp[v_bsz, v_i] = Ared_temp[v_bsz, v_i] + T.Cast("float32", A[v_bsz, v_i, v_k]) * T.Cast("float32", A[v_bsz, v_i, v_k])
        for bsz, i, k in T.grid(T.int64(2), T.int64(16), T.int64(256)):
            with T.sblock("rms_norm"):
                v_bsz, v_i, v_k = T.axis.remap("SSS", [bsz, i, k])
                rms_norm[v_bsz, v_i, v_k] = T.Cast("float16", T.Cast("float32", B[v_k]) * (T.Cast("float32", A[v_bsz, v_i, v_k]) / T.sqrt(Ared_temp[v_bsz, v_i] * T.float32(0.00390625) + T.float32(9.9999999999999995e-07))))

    @R.function
    def main(x: R.Tensor((2, 16, 256), dtype="float16"), weight: R.Tensor((256,), dtype="float16"),
             w_up: R.Tensor((256, 512), dtype="float16")) -> R.Tensor((2, 16, 512), dtype="float16"):
        cls = Module
        with R.dataflow():
            h = R.call_tir(cls.rms_norm, (x, weight), out_sinfo=R.Tensor((2, 16, 256), dtype="float16"))
            y = R.matmul(h, w_up, out_dtype="void")
            R.output(y)
        return y


def partition(mod, path: str = "annotate"):
    """TVM's two CUTLASS flows: ``partition_for_cutlass`` alone (annotate), or its composites
    merged by MergeCompositeFunctions (merge)."""
    if path == "annotate":
        return partition_for_cutlass(mod)
    return relax.transform.MergeCompositeFunctions()(partition_for_cutlass(mod, annotate_codegen=False))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", type=Path, help="write the partitioned module, the sources and the manifest here")
    ap.add_argument("--path", choices=("annotate", "merge"), default="annotate")
    args = ap.parse_args(argv)
    partitioned = partition(Module, args.path)
    if args.out is None:
        partitioned.show()
        return 0
    from byocc.cli.artifacts import output_files  # what ``byocc partition -o`` writes
    from byocc.cli.output import write_tree_atomic  # and how: all or nothing, through symlinks

    codegen = relax.transform.RunCodegen()(partitioned)
    files = output_files("rms_norm_fp16", partitioned, codegen)
    write_tree_atomic(args.out, files)
    print(f"wrote {len(files)} files to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
