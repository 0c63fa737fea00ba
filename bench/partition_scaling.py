"""Partition cost per binding: parse + FuseOpsByPattern(cutlass table) + MergeCompositeFunctions
+ print, on modules of 1 000 to 100 000 bindings from each generator of ``genmodel.py``
(``mlp``: the transformer-like chain; ``transformer``: a deep pre-LN residual transformer;
``cnn``: a deep NHWC ResNet; the last two carry residual matches).

    python bench/partition_scaling.py [--kinds mlp,transformer,cnn] [--sizes 1000,10000,100000]
                                      [--tvm-size 8700] [--repeat 3] [--tvm-python PY]

Prints per-binding cost and the growth exponent per generator (target <= 1.1; 100 000
bindings of a residual transformer in under 30 s). If apache-tvm is importable, also times
TVM 0.27 on the same text (at --tvm-size, since TVM is slow) in the same run and prints the
ratio (byocc: the fastest of --repeat runs; TVM: one run).
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _timing import growth_exponent  # noqa: E402
from genmodel import GENERATORS  # noqa: E402
from genmodel import make_module_text  # noqa: E402


def run_byocc(text: str, path: str) -> tuple[float, dict]:
    """Wall seconds of parse + partition + print, and the steps' seconds (``cpu``: the
    process's CPU seconds for the whole, steadier than wall time on a shared machine)."""
    from byocc.backends import get_patterns_with_prefix
    from byocc.text import parse_module
    from byocc.text import print_module
    from byocc.transform import partition

    steps = {}
    c0 = time.process_time()
    t0 = time.perf_counter()
    mod = parse_module(text, "<bench>")
    t1 = time.perf_counter()
    out = partition(mod, get_patterns_with_prefix("cutlass"), path=path, bind_constants=True)
    t2 = time.perf_counter()
    print_module(out)
    t3 = time.perf_counter()
    steps.update(parse=t1 - t0, partition=t2 - t1, print=t3 - t2, cpu=time.process_time() - c0)
    return t3 - t0, steps


TVM_SCRIPT = r"""
import sys, time
import tvm
from tvm import relax
import tvm.relax.backend.cuda.cutlass  # registers the table
import tvm.relax.backend.cuda.cublas
from tvm.relax.backend import get_patterns_with_prefix
text = sys.stdin.read()
t0 = time.perf_counter()
c0 = time.process_time()
mod = tvm.script.from_source(text)
mod = relax.transform.FuseOpsByPattern(get_patterns_with_prefix("cutlass"), bind_constants=True, annotate_codegen=False)(mod)
mod = relax.transform.MergeCompositeFunctions()(mod)
mod.script()
print(time.perf_counter() - t0, time.process_time() - c0)
"""


def run_tvm(text: str, python: str) -> tuple[float, float] | None:
    """TVM 0.27's wall and CPU seconds for the same parse + partition + print."""
    try:
        proc = subprocess.run([python, "-c", TVM_SCRIPT], input=text, capture_output=True,
                              text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        return None
    wall, cpu = proc.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,3000,10000,30000,100000")
    ap.add_argument("--kinds", default=",".join(GENERATORS),
                    help=f"generators to run, comma-separated (of {', '.join(GENERATORS)})")
    ap.add_argument("--path", default="merge", choices=["annotate", "merge"])
    ap.add_argument("--tvm-size", type=int, default=8700)
    ap.add_argument("--repeat", type=int, default=3,
                    help="byocc runs at --tvm-size; the fastest is compared with TVM's one run")
    ap.add_argument("--tvm-python", default=sys.executable,
                    help="a Python that has apache-tvm 0.27 installed (default: this one)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in kinds if k not in GENERATORS]
    if unknown:
        ap.error(f"unknown generator(s) {', '.join(unknown)}; choose from {', '.join(GENERATORS)}")
    exponents = {}
    for kind in kinds:
        totals, cpus = [], []
        print(f"== {kind} (--path {args.path})")
        print(f"{'bindings':>9} {'total s':>8} {'cpu s':>7} {'us/binding':>10} {'parse':>7} "
              f"{'partition':>9} {'print':>7}")
        for n in sizes:
            gc.collect()
            total, steps = run_byocc(make_module_text(n, kind), args.path)
            totals.append(total)
            cpus.append(steps["cpu"])
            print(f"{n:>9} {total:>8.2f} {steps['cpu']:>7.2f} {total / n * 1e6:>10.1f} "
                  f"{steps['parse']:>7.2f} {steps['partition']:>9.2f} {steps['print']:>7.2f}", flush=True)
        if len(sizes) > 1:
            exponents[kind] = (growth_exponent(sizes, totals), growth_exponent(sizes, cpus))
            print(f"growth exponent ({kind}): {exponents[kind][0]:.2f} wall, {exponents[kind][1]:.2f} cpu")
    if exponents:
        worst = max(e for pair in exponents.values() for e in pair)
        print("growth exponents (wall/cpu): "
              + ", ".join(f"{k} {w:.2f}/{c:.2f}" for k, (w, c) in exponents.items())
              + f" (worst {worst:.2f}, target <= 1.1)")
    try:
        probe_rc = subprocess.run([args.tvm_python, "-c", "import tvm"], capture_output=True).returncode
    except OSError:  # no such interpreter
        probe_rc = 1
    if probe_rc != 0:
        print(f"apache-tvm not importable by {args.tvm_python}: no TVM comparison")
        return 0
    for kind in kinds:
        text = make_module_text(args.tvm_size, kind)
        # byocc's run is short (a second or two) and this machine's speed drifts by half from
        # one second to the next, so it is timed --repeat times and the fastest run counts
        # (timeit's rule); TVM's single run lasts a minute or two and averages that out
        runs = []
        for _ in range(args.repeat):
            gc.collect()  # as before each scaling row: no garbage of earlier runs left to scan
            runs.append(run_byocc(text, args.path))
        byocc_t = min(t for t, _ in runs)
        byocc_cpu = min(steps["cpu"] for _, steps in runs)
        tvm = run_tvm(text, args.tvm_python)
        if tvm is None:
            print(f"{kind}: TVM failed or timed out at {args.tvm_size} bindings")
            continue
        # CPU seconds are the steadier measure on a shared machine (both sides are one thread)
        tvm_t, tvm_cpu = tvm
        each = ", ".join(f"{t:.2f}" for t, _ in runs)
        print(f"{kind}, {args.tvm_size} bindings: byocc {byocc_t:.2f} s ({byocc_cpu:.2f} cpu; best of "
              f"{args.repeat}: {each} s), TVM 0.27 {tvm_t:.2f} s ({tvm_cpu:.2f} cpu), ratio byocc/TVM "
              f"{byocc_t / tvm_t:.3f} wall, {byocc_cpu / tvm_cpu:.3f} cpu (target <= 0.025)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
