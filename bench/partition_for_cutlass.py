"""``partition_for_cutlass`` (attention rewrites + fusion + workspace) on transformer-like
modules whose attention is written out by hand (BSNH: reshape/permute, matmul, scale,
softmax, matmul), 22 bindings per layer.

    python bench/partition_for_cutlass.py [--layers 10,100,1000] [--tvm-layers 40] [--tvm-python PY]

Prints byocc's cost per binding (parse + driver + print), the growth exponent, and, when a
Python with apache-tvm 0.27 is given, TVM's time on the same text at --tvm-layers in the same
run, the ratio, and whether the two printed modules are identical. TVM's own
``annotate_workspace`` raises KeyError on every attention module (spec/backends.md section 16,
item 1); the TVM side replaces it by the same step with the dtype looked up as a string.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _timing import growth_exponent  # noqa: E402

T = 'R.Tensor((1, 128, 512), dtype="float16")'
W = 'R.Tensor((512, 512), dtype="float16")'


def make_text(layers: int) -> str:
    """A module with ``layers`` hand-written attention layers (weights shared)."""
    out = ["# from tvm.script import ir as I", "# from tvm.script import relax as R", "",
           "@I.ir_module", "class Module:", "    @R.function",
           f"    def main(x: {T}, wq: {W}, wk: {W}, wv: {W}, wo: {W}) -> {T}:",
           "        with R.dataflow():"]
    h = "x"
    for i in range(layers):
        p = f"l{i}_"

        def bind(name, value, ty):
            out.append(f'            {p}{name}: R.Tensor({ty}, dtype="float16") = {value}')

        for t in ("q", "k", "v"):
            bind(f"{t}", f"R.matmul({h}, w{t}, out_dtype=None)", "(1, 128, 512)")
            bind(f"{t}4", f"R.reshape({p}{t}, R.shape([1, 128, 8, 64]))", "(1, 128, 8, 64)")
            bind(f"{t}p", f"R.permute_dims({p}{t}4, axes=[0, 2, 1, 3])", "(1, 8, 128, 64)")
            bind(f"{t}3", f"R.reshape({p}{t}p, R.shape([8, 128, 64]))", "(8, 128, 64)")
        bind("kt", f"R.permute_dims({p}k3, axes=[0, 2, 1])", "(8, 64, 128)")
        bind("s", f"R.matmul({p}q3, {p}kt, out_dtype=None)", "(8, 128, 128)")
        bind("s2", f'R.multiply({p}s, R.const(0.125, "float16"))', "(8, 128, 128)")
        bind("pr", f"R.nn.softmax({p}s2, axis=-1)", "(8, 128, 128)")
        bind("o", f"R.matmul({p}pr, {p}v3, out_dtype=None)", "(8, 128, 64)")
        bind("o4", f"R.reshape({p}o, R.shape([1, 8, 128, 64]))", "(1, 8, 128, 64)")
        bind("op", f"R.permute_dims({p}o4, axes=[0, 2, 1, 3])", "(1, 128, 8, 64)")
        bind("o3", f"R.reshape({p}op, R.shape([1, 128, 512]))", "(1, 128, 512)")
        bind("y", f"R.matmul({p}o3, wo, out_dtype=None)", "(1, 128, 512)")
        bind("h", f"R.add({p}y, {h})", "(1, 128, 512)")
        h = f"{p}h"
    out += [f"            R.output({h})", f"        return {h}", ""]
    return "\n".join(out)


def run_byocc(text: str) -> tuple[float, str]:
    from byocc.relax.backend.cuda.cutlass import partition_for_cutlass
    from byocc.text import parse_module
    from byocc.text import print_module

    t0 = time.perf_counter()
    mod = parse_module(text, "<bench>")
    printed = print_module(partition_for_cutlass(mod))
    return time.perf_counter() - t0, printed


TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools")
TVM_SCRIPT = r"""
import sys, time
sys.path.insert(0, @TOOLS@)
import tvm
import tvm.relax.backend.cuda.cutlass as C
import tvm_workspace_fix  # TVM's annotate_workspace with its KeyError fixed (tools/)

tvm_workspace_fix.install()
text = sys.stdin.read()
t0 = time.perf_counter()
out = C.partition_for_cutlass(tvm.script.from_source(text)).script()
t = time.perf_counter() - t0
sys.stdout.write(f"{t}\n{out}")
"""


def run_tvm(text: str, python: str) -> tuple[float, str] | None:
    proc = subprocess.run([python, "-c", TVM_SCRIPT.replace("@TOOLS@", repr(TOOLS))], input=text, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"TVM run failed: {proc.stderr.strip().splitlines()[-1:]}")
        return None
    first, _, printed = proc.stdout.partition("\n")
    return float(first), printed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="10,100,1000")
    ap.add_argument("--tvm-layers", type=int, default=40)
    ap.add_argument("--tvm-python", default=None, help="a Python with apache-tvm 0.27")
    args = ap.parse_args()
    sizes = [int(s) for s in args.layers.split(",")]
    bindings, times = [], []
    print(f"{'layers':>7} {'bindings':>9} {'byocc s':>9} {'us/binding':>11}")
    for n in sizes:
        text = make_text(n)
        b = 22 * n
        t, _ = run_byocc(text)
        bindings.append(b)
        times.append(t)
        print(f"{n:>7} {b:>9} {t:>9.2f} {1e6 * t / b:>11.1f}")
    if len(sizes) > 1:
        print(f"growth exponent (time ~ bindings^k): k = {growth_exponent(bindings, times):.2f}")
    if args.tvm_python:
        text = make_text(args.tvm_layers)
        t_byocc, ours = run_byocc(text)
        res = run_tvm(text, args.tvm_python)
        if res is not None:
            t_tvm, theirs = res
            same = ours.rstrip("\n") == theirs.rstrip("\n")
            print(f"TVM 0.27 at {args.tvm_layers} layers ({22 * args.tvm_layers} bindings): TVM {t_tvm:.2f} s, "
                  f"byocc {t_byocc:.2f} s, TVM/byocc = {t_tvm / t_byocc:.1f}x; outputs identical: {same}")


if __name__ == "__main__":
    main()
