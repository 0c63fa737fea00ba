"""GPU test matrix for the GEMM family (cutlass and cublas backends), spec/backends.md s15.

One command on a machine with an NVIDIA GPU, nvcc, PyTorch and the `nvidia-cutlass` wheel:

    python bench/gpu/gemm_matrix.py --out $OUT [--jobs 16] [--quick] [--no-compile-baseline]

1. writes one Relax module per backend holding one function per case (every GEMM composite of
   the table x every dtype its check admits, the shapes of spec s15 and the large MLP shapes),
2. partitions it with byocc (`byocc partition --backend B -o DIR`) and builds the library
   (`byocc build DIR -j N`), timing both,
3. calls every entry point through byocc's native runner on fresh random inputs (never zeros;
   the output poisoned with NaN / 0x7f first) and compares against a float64 reference
   (per-dtype thresholds: relative max error = max|out-ref| / max(rms(ref), 1e-3)),
4. calls entry points with bad arguments and checks the error codes,
5. times the perf cases with CUDA-graph replay (warm-up, median of repeats) against PyTorch on
   the same shapes: eager `relu(x @ w + b)`, `relu(addmm(b, x, w))` (cuBLASLt's fused bias) and
   `torch.compile(mode="max-autotune")`, and reports the runner's host cost per call,
6. prints a table and writes `results.json`, `table.md` and the build log under --out.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_timing import time_graph  # noqa: E402

ACTS = (None, "relu", "gelu")
F16, BF16, F32, I8, U8 = "float16", "bfloat16", "float32", "int8", "uint8"


@dataclass
class Case:
    name: str
    backend: str
    dtype: str
    lhs: tuple
    rhs: tuple  # as stored: (..., K, N), or (..., N, K) when transposed
    transposed: bool = False
    bias: tuple | None = None
    act: str | None = None
    residual_op: str | None = None  # add | multiply
    residual: tuple | None = None  # shape; None with residual_op means "x" (the lhs)
    post: str | None = None
    out_dtype: str | None = None
    perf: bool = False
    dims: dict = field(default_factory=dict)  # symbolic dim name -> value used at run time
    symbol: str | None = None

    @property
    def out_type(self) -> str:
        if self.out_dtype:
            return self.out_dtype
        return "int32" if self.dtype in (I8, U8) else self.dtype


# ----------------------------------------------------------------------------- cases
def _mm_shape(lhs, rhs, transposed):
    rk = (rhs[:-2] + (rhs[-1], rhs[-2])) if transposed else rhs
    lb, rb = lhs[:-2], rk[:-2]
    n = max(len(lb), len(rb))
    lb = (1,) * (n - len(lb)) + tuple(lb)
    rb = (1,) * (n - len(rb)) + tuple(rb)
    batch = tuple(a if b == 1 else b for a, b in zip(lb, rb))
    return batch + (lhs[-2], rk[-1])


def gemm_family(backend: str) -> list[tuple]:
    """(transposed, bias, act, residual_op, post) for every composite of the backend's table."""
    out = []
    for transposed in (False, True):
        out.append((transposed, False, None, None, None))
        for act in ACTS:
            out.append((transposed, True, act, None, None))
            if backend == "cutlass":
                for op in ("add", "multiply"):
                    for post in (None, "relu"):
                        out.append((transposed, True, act, op, post))
    return out


def composite_cases(backend: str, quick: bool) -> list[Case]:
    cases = []
    dtypes = {"cutlass": (F16, F32, I8), "cublas": (F16, BF16, F32, I8)}[backend]
    for dtype in dtypes:
        for transposed, bias, act, op, post in gemm_family(backend):
            if dtype in (I8, U8) and (bias or act):
                if backend == "cublas":
                    continue  # the cublas check forbids bias with int8
                if act or op:
                    continue  # int32 outputs with activations: not a meaningful composite
            m, k, n = (256, 384, 512)
            rhs = (n, k) if transposed else (k, n)
            name = f"{backend}_{dtype}_{'T' if transposed else 'N'}_{'b' if bias else ''}{act or ''}{op or ''}{post or ''}"
            cases.append(Case(name, backend, dtype, (m, k), rhs, transposed, (n,) if bias else None,
                              act, op, (m, n) if op else None, post))
            if quick:
                break
    return cases


def spec15_cases(backend: str) -> list[Case]:
    """Shapes of spec s15 (M1/M2/X2/X3 for cutlass, B1-B3 for cublas)."""
    c: list[Case] = []
    if backend == "cutlass":
        rows = [
            ((32, 6), (6, 16), False, False, None), (("a", 6), (6, 16), False, True, None),
            ((4, 16), (128, 16), True, True, "relu"), ((35, 8), (8, 8), True, True, "gelu"),
            ((6, 32, 8), (6, 8, 10), False, True, None), ((6, 32, 8), (6, 10, 8), True, False, None),
            (("a", 32, 8), ("a", 10, 8), True, True, "gelu"), ((6, 32, 8), (8, 10), False, False, None),
            (("a", 32, 8), (8, 10), False, True, None), ((10, 16, 8), (10, 8), True, True, "relu"),
            ((32, 8), (10, 8, 10), False, True, "relu"), ((32, 8), ("a", 10, 8), True, True, "gelu"),
            ((3, 6, 32, 8), (8, 10), False, True, None), (("a", "b", 6, 32, 8), (8, 10), False, False, None),
            ((32, 8), (5, 3, 8, 10), False, True, "gelu"), ((5, 3, 32, 8), (5, 3, 10, 8), True, True, "relu"),
            ((3, 2, 4, 16, 15), (1, 1, 2, 15), True, True, "gelu"),
            ((1, 1, 16, 15), (3, 2, "a", 15, 2), False, False, None),
            # byocc additions: aligned shapes that reach the TMA tier, batch paths, operand classes
            ((8, 512, 1024), (8, 1024, 1024), False, True, "relu"),
            ((4, 128, 768), (768, 3072), False, True, "gelu"),
            ((64, 256), (6, 256, 512), False, True, None),
            ((1000, 520), (1024, 520), True, True, "relu"),
            ((1, 4096), (4096, 4096), True, True, None),
        ]
        for i, (lhs, rhs, t, bias, act) in enumerate(rows):
            n = rhs[-2] if t else rhs[-1]
            c.append(Case(f"cutlass_s15_{i}", backend, F16, lhs, rhs, t, (n,) if bias else None, act,
                          dims={"a": 17, "b": 3}))
        # residual cases of M1 and X3: (lhs, rhs, transposed, act, op, post, residual shape or None=x)
        res = [
            ((32, 8), (8, 8), False, None, "add", None, None),
            ((4, 16), (16, 16), True, "relu", "add", "relu", None),
            ((8, 32, 8), (8, 8, 8), False, None, "add", None, None),
            ((5, 3, 32, 8), (8, 8), True, "relu", "add", None, None),
            ((256, 512), (512, 512), False, None, "multiply", None, (512,)),
            ((256, 512), (512, 512), False, "relu", "multiply", "relu", (512,)),
            ((256, 512), (512, 512), True, "gelu", "add", "relu", (256, 512)),
        ]
        for i, (lhs, rhs, t, act, op, post, rshape) in enumerate(res):
            n = rhs[-2] if t else rhs[-1]
            out = _mm_shape(lhs, rhs, t)
            c.append(Case(f"cutlass_res_{i}", backend, F16, lhs, rhs, t, (n,), act, op,
                          rshape or out, post))
        # bias operand classes: per-row column vector, batched full, 3-D bias (M2)
        c.append(Case("cutlass_bias_col", backend, F16, (256, 512), (512, 384), False, (256, 1)))
        c.append(Case("cutlass_bias_full3d", backend, F16, (4, 128, 256), (4, 256, 128), False, (4, 128, 128), "relu"))
        c.append(Case("cutlass_m2", backend, F16, (1, 4, 8), (1, 8, 16), False, (1, 4, 16)))
        c.append(Case("cutlass_f16_to_f32", backend, F16, (512, 512), (512, 512), False, (512,), "relu",
                      out_dtype=F32))
        c.append(Case("cutlass_tf32_big", backend, F32, (1024, 1024), (1024, 1024), True, (1024,), "relu"))
    else:
        rows = [
            ((8, 8), (8, 8), False, False, None), (("a", 6), (6, 16), False, True, None),
            ((4, 16), (128, 16), True, True, "relu"), ((35, 8), (8, 8), True, True, "gelu"),
            ((6, 32, 8), (6, 8, 10), False, True, None), ((6, 32, 8), (6, 10, 8), True, False, None),
            (("a", 32, 8), ("a", 10, 8), True, True, "gelu"), ((5, 3, 32, 8), (5, 3, 10, 8), True, True, "relu"),
            (("a", 3, 32, 8), ("a", 3, 10, 8), True, True, "relu"), (("a", "b", 32, 8), ("a", "b", 10, 8), True, True, "relu"),
            ((5, 3, 32, 8), (8, 10), False, False, None),
        ]
        for dtype in (F16, F32):
            for i, (lhs, rhs, t, bias, act) in enumerate(rows):
                n = rhs[-2] if t else rhs[-1]
                c.append(Case(f"cublas_s15_{dtype}_{i}", backend, dtype, lhs, rhs, t, (n,) if bias else None,
                              act, dims={"a": 13, "b": 2}))
        i8 = [((8, 8), (8, 8), False), (("a", 8), (8, 16), False), ((4, 16), (128, 16), True),
              ((35, 16), (16, 128), False), ((6, 32, 8), (6, 8, 12), False), ((6, 32, 8), (6, 10, 8), True),
              (("a", 32, 8), ("a", 10, 8), True), ((5, 3, 32, 8), (5, 3, 8, 12), False), ((5, 3, 32, 8), (8, 12), False)]
        for i, (lhs, rhs, t) in enumerate(i8):
            c.append(Case(f"cublas_s15_int8_{i}", backend, I8, lhs, rhs, t, dims={"a": 11}))
        bf = [((10, 32), (64, 32)), ((32, 16), (32, 16)), ((2, 10, 32), (2, 64, 32))]
        for i, (lhs, rhs) in enumerate(bf):
            c.append(Case(f"cublas_s15_bf16_{i}", backend, BF16, lhs, rhs, True, out_dtype=F32))
    return c


PERF_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 3072, 1024), (16384, 1024, 3072),
               (128, 4096, 4096), (1000, 1024, 520)]


def perf_cases() -> list[Case]:
    out = []
    for backend in ("cutlass", "cublas"):
        for (m, n, k) in PERF_SHAPES:
            for t in (True, False):
                if backend == "cublas" and not t:
                    continue
                rhs = (n, k) if t else (k, n)
                out.append(Case(f"perf_{backend}_{m}x{n}x{k}_{'T' if t else 'N'}", backend, F16, (m, k), rhs, t,
                                (n,), "relu", perf=True))
    return out


# ----------------------------------------------------------------------------- module text
def _dims_text(shape) -> str:
    return "(" + ", ".join(f'"{d}"' if isinstance(d, str) else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def case_function(c: Case) -> str:
    syms = sorted({d for s in (c.lhs, c.rhs, c.bias or (), c.residual or ()) for d in s if isinstance(d, str)})
    params = [f'x: R.Tensor({_dims_text(c.lhs)}, dtype="{c.dtype}")',
              f'w: R.Tensor({_dims_text(c.rhs)}, dtype="{c.dtype}")']
    out_dtype = c.out_type
    if c.bias is not None:
        params.append(f'b: R.Tensor({_dims_text(c.bias)}, dtype="{out_dtype}")')
    if c.residual_op is not None:
        params.append(f'r: R.Tensor({_dims_text(c.residual)}, dtype="{out_dtype}")')
    lines = []
    for s in syms:
        lines.append(f"        {s} = T.int64()")
    lines.append("        with R.dataflow():")
    cur = "w"
    if c.transposed:
        nd = len(c.rhs)
        axes = list(range(nd - 2)) + [nd - 1, nd - 2]
        lines.append(f"            wt = R.permute_dims(w, axes={axes})" if nd > 2 else "            wt = R.permute_dims(w)")
        cur = "wt"
    od = f'"{c.out_dtype}"' if c.out_dtype else ("\"int32\"" if c.dtype in (I8, U8) else "None")
    lines.append(f"            y = R.matmul(x, {cur}, out_dtype={od})")
    v = "y"
    if c.bias is not None:
        lines.append(f"            z = R.add({v}, b)")
        v = "z"
    if c.act:
        lines.append(f"            a = R.nn.{c.act}({v})")
        v = "a"
    if c.residual_op:
        lines.append(f"            s = R.{c.residual_op}({v}, r)")
        v = "s"
    if c.post:
        lines.append(f"            o = R.nn.relu({v})")
        v = "o"
    lines.append(f"            R.output({v})")
    lines.append(f"        return {v}")
    head = f"    @R.function\n    def {c.name}({', '.join(params)}):\n"
    return head + "\n".join(lines) + "\n"


def module_text(cases: list[Case]) -> str:
    body = "\n".join(case_function(c) for c in cases)
    return ("from tvm.script import ir as I\nfrom tvm.script import relax as R\nfrom tvm.script import tir as T\n\n"
            "@I.ir_module\nclass Module:\n" + body)


# ----------------------------------------------------------------------------- reference
def torch_dtype(name):
    import torch

    return {F16: torch.float16, BF16: torch.bfloat16, F32: torch.float32, I8: torch.int8, U8: torch.uint8,
            "int32": torch.int32}[name]


def resolve(shape, dims):
    return tuple(dims[d] if isinstance(d, str) else d for d in shape)


def make_inputs(c: Case, gen):
    import torch

    dims = c.dims
    def rand(shape, dtype):
        shape = resolve(shape, dims)
        if dtype in (I8,):
            return torch.randint(-8, 8, shape, generator=gen, device="cuda", dtype=torch.int8)
        if dtype in (U8,):
            return torch.randint(0, 8, shape, generator=gen, device="cuda", dtype=torch.uint8)
        t = torch.rand(shape, generator=gen, device="cuda", dtype=torch.float32) * 2 - 1
        return t.to(torch_dtype(dtype))
    xs = [rand(c.lhs, c.dtype), rand(c.rhs, c.dtype)]
    if c.bias is not None:
        xs.append(rand(c.bias, c.out_type))
    if c.residual_op is not None:
        xs.append(rand(c.residual, c.out_type))
    return xs


def reference(c: Case, xs):
    import torch

    x, w = xs[0].double(), xs[1].double()
    if c.transposed:
        w = w.transpose(-1, -2)
    y = torch.matmul(x, w)
    i = 2
    if c.bias is not None:
        y = y + xs[i].double()
        i += 1
    if c.act == "relu":
        y = torch.relu(y)
    elif c.act == "gelu":
        y = torch.nn.functional.gelu(y)
    if c.residual_op:
        r = xs[i].double()
        i += 1
        y = y + r if c.residual_op == "add" else y * r
    if c.post:
        y = torch.relu(y)
    return y


THRESHOLDS = {F16: 2e-2, BF16: 4e-2, F32: 1e-2, "int32": 0.0}


def compare(c: Case, out, ref) -> tuple[bool, float]:
    import torch

    o = out.double()
    if not torch.isfinite(o).all():
        return False, float("inf")
    if c.out_type == "int32":
        err = (o - ref).abs().max().item() if o.numel() else 0.0
        return err == 0.0, err
    rms = ref.pow(2).mean().sqrt().item() if ref.numel() else 1.0
    err = ((o - ref).abs().max().item() if o.numel() else 0.0) / max(rms, 1e-3)
    thr = THRESHOLDS[c.out_type]
    if c.backend == "cublas" and c.dtype == F32:
        thr = 1e-4  # full fp32 (no TF32) on cuBLAS
    return err <= thr, err


# ----------------------------------------------------------------------------- running
def run(cmd, log, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    dt = time.perf_counter() - t0
    with open(log, "a") as f:
        f.write(f"$ {' '.join(map(str, cmd))}\n[{dt:.1f}s rc={p.returncode}]\n{p.stdout}\n{p.stderr}\n")
    return p, dt


def find_symbols(codegen_text: str, cases: list[Case]) -> None:
    starts = [(m.start(), m.group(1)) for m in re.finditer(r"def (\w+)\(", codegen_text)]
    by_name = {c.name: c for c in cases}
    for i, (pos, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(codegen_text)
        if name in by_name:
            m = re.search(r'R\.call_dps_packed\("(\w+)"', codegen_text[pos:end])
            by_name[name].symbol = m.group(1) if m else None


def check_bad_arguments(lib, c: Case, xs, out) -> dict:
    """Wrong count, dtype, shape, device, misalignment: the codes the ABI promises."""
    import torch

    from byocc.runtime.native import ByoccRuntimeError

    results = {}
    def expect(name, code, *args):
        try:
            lib[c.symbol](*args, out=out)
            results[name] = "no error"
        except ByoccRuntimeError as e:
            results[name] = "ok" if e.code == code else f"code {e.code}: {e}"
        except Exception as e:  # the runner itself refused (e.g. count)
            results[name] = f"runner: {type(e).__name__}: {e}"
    expect("nargs", 1, *xs[:-1])
    bad = [xs[0].float() if xs[0].dtype != torch.float32 else xs[0].half()] + xs[1:]
    expect("dtype", 2, *bad)
    expect("shape", 3, xs[0][:-1] if xs[0].shape[0] > 1 else torch.cat([xs[0], xs[0]]), *xs[1:])
    expect("device", 4, xs[0].cpu(), *xs[1:])
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "gpu_out"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--quick", action="store_true", help="one case per dtype (smoke test)")
    ap.add_argument("--no-compile-baseline", action="store_true", help="skip torch.compile")
    ap.add_argument("--only", choices=["cutlass", "cublas"], default=None)
    ap.add_argument("--phase", choices=["all", "build", "run"], default="all",
                    help="build: partition and build only (a second call with run reuses the objects)")
    ap.add_argument("--build-timeout", type=float, default=540.0, help="seconds for all builds together")
    ap.add_argument("--sm80", action="store_true", help="also check every cutlass case on an sm_80-only build")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("BYOCC_BENCH_WORK", ROOT / ".gpu_work"))
    work.mkdir(parents=True, exist_ok=True)
    log = out / "build.log"
    log.write_text("")
    results = {"cases": [], "bad_args": {}, "perf": [], "build": {}}
    backends = [args.only] if args.only else ["cutlass", "cublas"]
    cases = {}
    for b in backends:
        cases[b] = composite_cases(b, args.quick) + ([] if args.quick else spec15_cases(b)) + \
            [c for c in perf_cases() if c.backend == b and (not args.quick or c.lhs[0] == 4096)]
    py = [sys.executable, "-m", "byocc"]
    for b in backends:
        model = work / f"gemm_{b}.relax"
        text = module_text(cases[b])
        d = work / f"out_{b}"
        if not (d / "manifest.json").exists() or not model.exists() or model.read_text() != text:
            model.write_text(text)
            p, dt = run(py + ["partition", str(model), "--backend", b, "-o", str(d)], log)
            results["build"][f"{b}_partition_s"] = round(dt, 2)
            if p.returncode != 0:
                print(f"partition {b} failed: {p.stderr[-2000:]}")
                results["build"][f"{b}_partition_error"] = p.stderr[-4000:]
                continue
        find_symbols((d / f"gemm_{b}.codegen.relax").read_text(), cases[b])
        left = args.build_timeout - (time.perf_counter() - t_start)
        try:
            p, dt = run(py + ["build", str(d), "-j", str(args.jobs)], log, timeout=max(left, 10))
        except subprocess.TimeoutExpired:
            print(f"build {b}: out of time (rerun with --phase run to continue)")
            results["build"][f"{b}_build_error"] = "timeout"
            continue
        results["build"][f"{b}_build_s"] = round(dt, 1)
        results["build"][f"{b}_units"] = len(list((d / "src").rglob("*.cu")))
        if p.returncode != 0:
            print(f"build {b} failed ({dt:.0f}s): {p.stderr[-3000:]}")
            results["build"][f"{b}_build_error"] = p.stderr[-4000:]
    if args.phase == "build":
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
        print(json.dumps(results["build"], indent=1))
        return 0
    import torch

    from byocc.runtime import native

    gen = torch.Generator(device="cuda")
    gen.manual_seed(int(time.time()))
    runs = [(b, work / f"out_{b}", True) for b in backends]
    if args.sm80 and "cutlass" in backends and (work / "out_cutlass" / "manifest.json").exists():
        # spec s15 X8: every cutlass case once more through a library built without the
        # sm_90a units (the 2.x and generic tiers run on the H200 too)
        import shutil

        d80 = work / "out_cutlass_sm80"
        if d80.exists():
            shutil.rmtree(d80)
        shutil.copytree(work / "out_cutlass", d80, ignore=shutil.ignore_patterns("obj", "lib"))
        p, dt = run(py + ["build", str(d80), "--arch", "sm_80", "-j", str(args.jobs)], log)
        results["build"]["cutlass_sm80_build_s"] = round(dt, 1)
        if p.returncode == 0:
            runs.append(("cutlass_sm80", d80, False))
        else:
            results["build"]["cutlass_sm80_build_error"] = p.stderr[-4000:]
    for label, d, timed in runs:
        b = "cutlass" if label.startswith("cutlass") else label
        try:
            lib = native.load(d)
        except Exception as e:
            print(f"load {label}: {e}")
            results["build"][f"{label}_load_error"] = str(e)
            continue
        bad_done = False
        for c in cases[b]:
            row = {"case": c.name, "backend": label, "dtype": c.dtype, "out": c.out_type, "lhs": str(c.lhs),
                   "rhs": str(c.rhs), "T": c.transposed, "bias": str(c.bias), "act": c.act,
                   "res": c.residual_op, "post": c.post, "symbol": c.symbol}
            if c.symbol is None:
                row["status"] = "not offloaded"
                results["cases"].append(row)
                continue
            try:
                xs = make_inputs(c, gen)
                ref = reference(c, xs)
                o = torch.empty(ref.shape, device="cuda", dtype=torch_dtype(c.out_type))
                if o.dtype.is_floating_point:
                    o.fill_(float("nan"))
                else:
                    o.fill_(0x7F7F7F7F if o.dtype == torch.int32 else 0x7F)
                order = [a["name"] for a in lib.functions[c.symbol]["args"]]
                named = dict(zip(["x", "w", "b", "r"] if c.bias is not None else ["x", "w", "r"], xs))
                call_args = [named[n] for n in order]  # the fused function's parameter order
                row["arg_order"] = ",".join(order)
                lib[c.symbol](*call_args, out=o)
                torch.cuda.synchronize()
                ok, err = compare(c, o, ref)
                row.update(status="ok" if ok else "WRONG", err=err)
                if not bad_done and ok and not c.dims:
                    results["bad_args"][f"{label}:{c.name}"] = check_bad_arguments(lib, c, call_args, o)
                    bad_done = True
                if c.perf and ok and timed:
                    row.update(perf_row(lib, c, xs, call_args, o, args))
            except Exception as e:
                row.update(status="ERROR", error=f"{type(e).__name__}: {e}")
                traceback.print_exc()
            results["cases"].append(row)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    write_table(results, out)
    return 0


def perf_row(lib, c: Case, xs, call_args, o, args) -> dict:
    import torch

    m, k = c.lhs
    n = c.rhs[0] if c.transposed else c.rhs[1]
    flop = 2.0 * m * n * k
    x, w, b = xs
    wk = w.t() if c.transposed else w  # logical (K, N) view
    stream = torch.cuda.current_stream().cuda_stream
    row = {}
    t = time_graph(lambda: lib[c.symbol](*call_args, out=o, stream=torch.cuda.current_stream().cuda_stream))
    row["byocc_tflops"] = flop / t / 1e9
    eager = lambda: torch.relu(x @ wk + b)
    row["eager_tflops"] = flop / time_graph(eager) / 1e9
    addmm = lambda: torch.relu(torch.addmm(b, x, wk))
    row["addmm_tflops"] = flop / time_graph(addmm) / 1e9
    if not args.no_compile_baseline:
        try:
            f = torch.compile(lambda x, w, b: torch.relu(x @ w + b), mode="max-autotune-no-cudagraphs")
            f(x, wk, b)
            torch.cuda.synchronize()
            row["compile_tflops"] = flop / time_graph(lambda: f(x, wk, b)) / 1e9
        except Exception as e:
            row["compile_error"] = str(e)[:200]
    try:
        row["host_us"] = lib.host_overhead_us(c.symbol, *call_args, out=o)
    except Exception as e:
        row["host_us_error"] = str(e)[:200]
    del stream
    return row


def write_table(results, out: Path) -> None:
    rows = results["cases"]
    n_ok = sum(r.get("status") == "ok" for r in rows)
    n_bad = sum(r.get("status") in ("WRONG", "ERROR") for r in rows)
    lines = [f"correctness: {n_ok} ok, {n_bad} wrong or error, "
             f"{sum(r.get('status') == 'not offloaded' for r in rows)} not offloaded, of {len(rows)}"]
    for label in sorted({r["backend"] for r in rows}):
        sub = [r for r in rows if r["backend"] == label]
        lines.append(f"  {label}: {sum(r.get('status') == 'ok' for r in sub)}/{len(sub)} ok")
    lines.append("")
    for r in rows:
        if r.get("status") in ("WRONG", "ERROR"):
            lines.append(f"  {r['status']}: {r['backend']} {r['case']} {r.get('err', '')} {r.get('error', '')}")
    lines.append("")
    lines.append("| case | byocc TFLOP/s | eager | relu(addmm) | compile | x eager | x best(addmm,compile) | host us |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "byocc_tflops" not in r:
            continue
        best = max(r.get("addmm_tflops", 0), r.get("compile_tflops", 0))
        lines.append(f"| {r['case']} | {r['byocc_tflops']:.0f} | {r['eager_tflops']:.0f} | {r['addmm_tflops']:.0f} | "
                     f"{r.get('compile_tflops', float('nan')):.0f} | {r['byocc_tflops'] / r['eager_tflops']:.2f} | "
                     f"{r['byocc_tflops'] / best:.2f} | {r.get('host_us', float('nan')):.1f} |")
    big = [r for r in rows if "byocc_tflops" in r and r["backend"] == "cutlass" and r["case"].endswith("_T")
           and any(f"{m}x{n}x{k}" in r["case"] for (m, n, k) in PERF_SHAPES[:4])]
    if big:
        g = lambda key: math.exp(sum(math.log(r[key] if key != "best" else max(r.get("addmm_tflops", 0), r.get("compile_tflops", 0))) for r in big) / len(big))
        lines.append("")
        lines.append(f"geomean over the 4 large MLP shapes (cutlass TN): byocc/eager {g('byocc_tflops') / g('eager_tflops'):.3f}, "
                     f"byocc/best(addmm,compile) {g('byocc_tflops') / g('best'):.3f}")
    lines.append("")
    lines.append("bad-argument codes: " + json.dumps(results["bad_args"]))
    lines.append("build: " + json.dumps({k: v for k, v in results["build"].items() if not k.endswith("error")}))
    text = "\n".join(lines) + "\n"
    (out / "table.md").write_text(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
