"""GPU benchmark of byocc's attention step (the CUTLASS backend's attention composites).

1. writes one Relax module with one function per bench case (R.nn.attention /
   attention_bias on BSNH tensors, or the stacked split form), partitions it
   (``byocc partition --backend cutlass -o DIR``) and builds it (``byocc build DIR -j N``);
2. calls every entry point through byocc's native runner on fresh random inputs, the output
   poisoned with NaN first, and compares with a float64 reference (torch math on doubles);
3. times each under CUDA-graph replay against ``F.scaled_dot_product_attention`` (flash where
   PyTorch picks it; the math form with a bias) and prints a table (TFLOP/s, ratio); JSON and
   a Markdown table go to --out.

    python bench/gpu/attn_bench.py --out bench/gpu/results/attn [-j 16] [--quick]

Shapes are the issue's: batch 8, seq 512 and 2048, 16 heads, dims 64 and 128; batch 1, seq
4096, 32 heads, dim 128; causal and not; GQA; with bias; stacked. The run is bounded by
--time-budget (seconds, default 300): timing is skipped for the cases left when it is spent.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_timing import time_graph as _time_graph  # noqa: E402

#: CUDA-graph timing (bench/gpu/gpu_timing.py) with this script's repeat counts.
time_graph = functools.partial(_time_graph, reps=5, iters=5, warm=2)

TOL = {"float16": 2e-2, "bfloat16": 4e-2}


@dataclass
class Case:
    name: str
    b: int
    s: int
    n: int
    h: int
    nkv: int | None = None
    causal: bool = False
    bias: bool = False
    stacked: bool = False
    dtype: str = "float16"

    @property
    def kv(self) -> int:
        return self.nkv or self.n

    def flops(self) -> float:
        f = 4.0 * self.b * self.n * self.s * self.s * self.h
        return f / 2 if self.causal else f

    def key(self) -> tuple:
        """What identifies the case's entry in the manifest."""
        return (self.arg_shapes(), self.dtype, "BottomRight" if self.causal else None)

    def arg_shapes(self) -> tuple:
        if self.stacked:
            shapes = [(self.b, self.s, 3 * self.n * self.h)]
        else:
            shapes = [(self.b, self.s, self.n, self.h), (self.b, self.s, self.kv, self.h),
                      (self.b, self.s, self.kv, self.h)]
        if self.bias:
            shapes.append((1, self.n, self.s, self.s))
        return tuple(shapes)


def cases(quick: bool) -> list[Case]:
    out = []
    for dtype in ("float16",) if quick else ("float16", "bfloat16"):
        t = "" if dtype == "float16" else "_bf16"
        for s in (512, 2048):
            for h in (64, 128):
                for causal in (False, True):
                    out.append(Case(f"b8_s{s}_n16_h{h}{'_causal' if causal else ''}{t}", 8, s, 16, h,
                                    causal=causal, dtype=dtype))
        for causal in (False, True):
            out.append(Case(f"b1_s4096_n32_h128{'_causal' if causal else ''}{t}", 1, 4096, 32, 128,
                            causal=causal, dtype=dtype))
        out.append(Case(f"gqa_b8_s2048_n16_kv4_h128{t}", 8, 2048, 16, 128, nkv=4, dtype=dtype))
        out.append(Case(f"gqa_b8_s2048_n16_kv4_h128_causal{t}", 8, 2048, 16, 128, nkv=4, causal=True, dtype=dtype))
        out.append(Case(f"bias_b8_s512_n16_h64{t}", 8, 512, 16, 64, bias=True, dtype=dtype))
        out.append(Case(f"stacked_b8_s512_n16_h64{t}", 8, 512, 16, 64, stacked=True, dtype=dtype))
        out.append(Case(f"stacked_b8_s2048_n16_h128{t}", 8, 2048, 16, 128, stacked=True, dtype=dtype))
    return out


def _t(shape, dtype) -> str:
    return f'R.Tensor({tuple(shape)}, dtype="{dtype}")'


def function_text(i: int, c: Case) -> str:
    dt = c.dtype
    out = _t((c.b, c.s, c.n, c.h), dt)
    mask = '"BottomRight"' if c.causal else "None"
    op_args = "q, k, v" + (", bias" if c.bias else "")
    body = []
    if c.stacked:
        params = [f"qkv: {_t(c.arg_shapes()[0], dt)}"]
        part = _t((c.b, c.s, c.n * c.h), dt)
        body.append(f"parts: R.Tuple({part}, {part}, {part}) = R.split(qkv, indices_or_sections=3, axis=2)")
        for j, x in enumerate("qkv"):
            body.append(f"{x}0: {part} = parts[{j}]")
            body.append(f"{x}: {out} = R.reshape({x}0, R.shape([{c.b}, {c.s}, {c.n}, {c.h}]))")
    else:
        params = [f"{x}: {_t(s, dt)}" for x, s in zip("qkv", c.arg_shapes())]
    if c.bias:
        params.append(f"bias: {_t(c.arg_shapes()[-1], dt)}")
    body.append(f"y: {out} = R.nn.attention({op_args}, scale=None, causal_mask={mask}, window_size=None)")
    lines = "\n".join("            " + x for x in body)
    return (f"    @R.function\n    def case{i}({', '.join(params)}) -> {out}:\n        with R.dataflow():\n"
            f"{lines}\n            R.output(y)\n        return y\n")


def module_text(cs: list[Case]) -> str:
    return ("# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"
            + "\n".join(function_text(i, c) for i, c in enumerate(cs)))


def run(cmd, log: Path, timeout=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])})
    with log.open("a") as f:
        f.write(" ".join(map(str, cmd)) + "\n" + p.stdout + p.stderr)
    return p, time.perf_counter() - t0


def reference(q, k, v, bias, causal):
    """float64 attention, one batch at a time (BSNH in and out)."""
    import torch

    outs = []
    n, nkv = q.shape[2], k.shape[2]
    for b in range(q.shape[0]):
        qd = q[b].double().transpose(0, 1)
        kd = k[b].double().transpose(0, 1).repeat_interleave(n // nkv, 0)
        vd = v[b].double().transpose(0, 1).repeat_interleave(n // nkv, 0)
        s = qd @ kd.transpose(1, 2) / math.sqrt(q.shape[3])
        if bias is not None:
            s = s + bias[0].double()
        if causal:
            sq, skv = s.shape[-2:]
            i = torch.arange(sq, device=s.device)[:, None]
            j = torch.arange(skv, device=s.device)[None, :]
            s = s.masked_fill(j > i + (skv - sq), float("-inf"))
        outs.append((torch.softmax(s, -1) @ vd).transpose(0, 1))
    return torch.stack(outs)


def inputs(c: Case, gen):
    import torch

    dt = getattr(torch, c.dtype)
    def rnd(*shape):
        return torch.randn(*shape, device="cuda", dtype=dt, generator=gen)
    bias = rnd(*c.arg_shapes()[-1]) if c.bias else None
    if c.stacked:
        qkv = rnd(*c.arg_shapes()[0])
        q, k, v = (x.reshape(c.b, c.s, c.n, c.h) for x in qkv.split(c.n * c.h, dim=2))
        return [qkv] + ([bias] if c.bias else []), q, k, v, bias
    q, k, v = rnd(c.b, c.s, c.n, c.h), rnd(c.b, c.s, c.kv, c.h), rnd(c.b, c.s, c.kv, c.h)
    return [q, k, v] + ([bias] if c.bias else []), q, k, v, bias


def sdpa(q, k, v, bias, causal):
    import torch.nn.functional as F

    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    gqa = k.shape[2] != q.shape[2]
    if causal and q.shape[1] == k.shape[1] and bias is None:
        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=True, enable_gqa=gqa)
    return F.scaled_dot_product_attention(qt, kt, vt, attn_mask=bias, enable_gqa=gqa)


def check_and_time(lib, symbol, c: Case, gen, timing: bool) -> dict:
    import torch

    args, q, k, v, bias = inputs(c, gen)
    out = torch.full((c.b, c.s, c.n, c.h), float("nan"), device="cuda", dtype=q.dtype)
    lib[symbol](*args, out=out)
    torch.cuda.synchronize()
    ref = reference(q, k, v, bias, c.causal)
    rms = max(float(ref.pow(2).mean().sqrt()), 1e-3)
    err = float((out.double() - ref).abs().max()) / rms
    floor = float((ref.to(q.dtype).double() - ref).abs().max()) / rms
    ok = not torch.isnan(out).any().item() and err <= max(TOL[c.dtype], 2 * floor)
    row = {"case": c.name, "symbol": symbol, "rel_err": err, "floor": floor, "ok": ok}
    if timing:
        t = time_graph(lambda: lib[symbol](*args, out=out))
        t_ref = time_graph(lambda: sdpa(q, k, v, bias, c.causal))
        row.update(ms=t, sdpa_ms=t_ref, tflops=c.flops() / t / 1e9, sdpa_tflops=c.flops() / t_ref / 1e9,
                   ratio=t_ref / t)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "bench" / "gpu" / "results" / "attn"))
    ap.add_argument("-j", "--jobs", type=int, default=16)
    ap.add_argument("--quick", action="store_true", help="f16 only")
    ap.add_argument("--time-budget", type=float, default=300.0)
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("BYOCC_BENCH_WORK", ROOT / ".gpu_work")) / "attn"
    work.mkdir(parents=True, exist_ok=True)
    log = out / "build.log"
    log.write_text("")
    cs = cases(args.quick)
    model = work / "attn.relax"
    model.write_text(module_text(cs))
    d = work / "out"
    py = [sys.executable, "-m", "byocc"]
    p, t_part = run(py + ["partition", str(model), "--backend", "cutlass", "-o", str(d)], log)
    if p.returncode != 0:
        print("partition failed:", p.stderr[-3000:])
        return 1
    p, t_build = run(py + ["build", str(d), "-j", str(args.jobs)], log, timeout=600)
    if p.returncode != 0:
        print("build failed:", p.stderr[-3000:])
        return 1
    print(f"partition {t_part:.1f} s, build {t_build:.1f} s", flush=True)
    import torch

    from byocc.runtime import native

    lib = native.load(d)
    by_key = {}
    for f in json.loads((d / "manifest.json").read_text())["functions"]:
        shapes = tuple(tuple(a["shape"]) for a in f["args"] if a["role"] != "workspace")
        by_key[(shapes, f["args"][0]["dtype"], f["steps"][0]["causal_mask"])] = f["symbol"]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(int(time.time()))
    rows = []
    for c in cs:
        timing = time.perf_counter() - t_start < args.time_budget
        row = check_and_time(lib, by_key[c.key()], c, gen, timing)
        rows.append(row)
        perf = (f"{row['ms'] * 1e3:9.1f} us {row['tflops']:7.1f} TFLOP/s  sdpa {row['sdpa_tflops']:7.1f}  "
                f"x{row['ratio']:.3f}") if "ms" in row else "(not timed: time budget spent)"
        print(f"{c.name:36s} err {row['rel_err']:.2e} (floor {row['floor']:.1e}) {'ok ' if row['ok'] else 'BAD'} {perf}",
              flush=True)
    bad = [r for r in rows if not r["ok"]]
    print(f"correctness: {len(rows) - len(bad)} of {len(rows)} ok")
    (out / "attn_results.json").write_text(json.dumps({"rows": rows, "device": torch.cuda.get_device_name(),
                                                       "partition_s": t_part, "build_s": t_build}, indent=1))
    lines = ["| case | err / rms | byocc us | TFLOP/s | SDPA TFLOP/s | x SDPA |", "|---|---|---|---|---|---|"]
    for r in rows:
        perf = (f"{r['ms'] * 1e3:.1f} | {r['tflops']:.1f} | {r['sdpa_tflops']:.1f} | {r['ratio']:.3f}"
                if "ms" in r else "- | - | - | -")
        lines.append(f"| {r['case']} | {r['rel_err']:.2e} | {perf} |")
    (out / "attn_table.md").write_text("\n".join(lines) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
