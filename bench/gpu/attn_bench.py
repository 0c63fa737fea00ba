"""GPU benchmark of byocc's attention step (the CUTLASS backend's attention composites).

1. writes one Relax module with one function per bench case (R.nn.attention /
   attention_bias on BSNH tensors, or the stacked split form), partitions it
   (``byocc partition --backend cutlass -o DIR``) and builds it (``byocc build DIR -j N``);
2. calls every entry point through byocc's native runner on fresh random inputs, the output
   poisoned with NaN first, and compares with a float64 reference (torch math on doubles);
3. times each under CUDA-graph replay against ``F.scaled_dot_product_attention`` (flash where
   PyTorch picks it; the math form with a bias) and against ``torch.compile`` of the plain
   formula (softmax(q k^T * scale + mask/bias) v, which inductor may rewrite into SDPA), and
   prints a table (TFLOP/s, ratio, the kernel the manifest plans: "sm90" = the sm_90a fused
   CUTLASS FMHA path, "simt" = the v1 kernel); JSON and a Markdown table go to --out.

    python bench/gpu/attn_bench.py --out bench/gpu/results/attn [-j 16] [--quick]

Shapes are the issue's: batch 8, seq 512 and 2048, 16 heads, dims 64 and 128; batch 1, seq
4096, 32 heads, dim 128; causal and not; GQA; with bias; stacked; plus dim 256. --quick: f16,
and bf16 for two shapes only. The run is bounded by --time-budget (seconds, default 300):
timing is skipped for the cases left when it is spent; torch.compile by --compile-budget.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import re
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
#: The issue's target shapes, the ones torch.compile is timed on (its compiles are slow).
COMPILE_CASES = {f"{n}{c}" for n in ("b8_s2048_n16_h128", "b8_s512_n16_h64", "b1_s4096_n32_h128")
                 for c in ("", "_causal")}


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
    s_kv: int | None = None  # edge cases: another key length
    mask_kind: str | None = None  # edge cases: "TopLeft" / "BottomRight" (default: BottomRight when causal)
    scale: float | None = None  # None: 1/sqrt(h)
    timed: bool = True

    @property
    def kv(self) -> int:
        return self.nkv or self.n

    @property
    def skv(self) -> int:
        return self.s_kv or self.s

    @property
    def mask(self) -> str | None:
        return self.mask_kind or ("BottomRight" if self.causal else None)

    def flops(self) -> float:
        f = 4.0 * self.b * self.n * self.s * self.s * self.h
        return f / 2 if self.causal else f

    def key(self) -> tuple:
        """What identifies the case's entry in the manifest."""
        return (self.arg_shapes(), self.dtype, self.mask)

    def arg_shapes(self) -> tuple:
        if self.stacked:
            shapes = [(self.b, self.s, 3 * self.n * self.h)]
        else:
            shapes = [(self.b, self.s, self.n, self.h), (self.b, self.skv, self.kv, self.h),
                      (self.b, self.skv, self.kv, self.h)]
        if self.bias:
            shapes.append((1, self.n, self.s, self.skv))
        return tuple(shapes)


def edge_cases() -> list[Case]:
    """Correctness only (not timed): the sm_90a kernel's masks with seq_q != seq_kv, key and
    query tails (lengths that are no multiple of its tiles), a tiny query, GQA with tails, an
    explicit scale, bf16, and a seq_q that sends the call to the SIMT kernel."""
    def edge(name, s, skv, n, h, **kw):
        return Case(f"edge_{name}", 2, s, n, h, s_kv=skv, timed=False, **kw)
    return [
        edge("q200_kv333_h64_bottomright", 200, 333, 4, 64, mask_kind="BottomRight"),
        edge("q136_kv77_h64_none_scale0.05", 136, 77, 4, 64, scale=0.05),
        edge("q264_kv100_h128_topleft", 264, 100, 4, 128, mask_kind="TopLeft"),
        edge("q200_kv333_h128_topleft", 200, 333, 4, 128, mask_kind="TopLeft"),
        edge("q8_kv1000_h128_none", 8, 1000, 2, 128),
        edge("gqa_q136_kv200_n8_kv2_h64_bottomright", 136, 200, 8, 64, nkv=2, mask_kind="BottomRight"),
        edge("q200_kv333_h128_bottomright_bf16", 200, 333, 4, 128, mask_kind="BottomRight", dtype="bfloat16"),
        edge("q100_kv100_h64_none_simt", 100, 100, 4, 64),
    ]


def cases(quick: bool) -> list[Case]:
    out = []
    for dtype in ("float16", "bfloat16"):
        t = "" if dtype == "float16" else "_bf16"
        if quick and dtype == "bfloat16":
            out.extend(Case(f"b8_s2048_n16_h128{'_causal' if c else ''}{t}", 8, 2048, 16, 128, causal=c, dtype=dtype)
                       for c in (False, True))
            continue
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
        for causal in (False, True):
            out.append(Case(f"b4_s2048_n16_h256{'_causal' if causal else ''}{t}", 4, 2048, 16, 256,
                            causal=causal, dtype=dtype))
    return out + edge_cases()


def _t(shape, dtype) -> str:
    return f'R.Tensor({tuple(shape)}, dtype="{dtype}")'


def function_text(i: int, c: Case) -> str:
    dt = c.dtype
    out = _t((c.b, c.s, c.n, c.h), dt)
    mask = f'"{c.mask}"' if c.mask else "None"
    scale = "None" if c.scale is None else f"T.float32({c.scale!r})"
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
    body.append(f"y: {out} = R.nn.attention({op_args}, scale={scale}, causal_mask={mask}, window_size=None)")
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


def reference(q, k, v, bias, mask, scale=None):
    """float64 attention, one batch at a time (BSNH in and out); ``mask``: None, "TopLeft"
    (key j > query i masked) or "BottomRight" (j > i + seq_kv - seq_q)."""
    import torch

    outs = []
    n, nkv = q.shape[2], k.shape[2]
    for b in range(q.shape[0]):
        qd = q[b].double().transpose(0, 1)
        kd = k[b].double().transpose(0, 1).repeat_interleave(n // nkv, 0)
        vd = v[b].double().transpose(0, 1).repeat_interleave(n // nkv, 0)
        s = (qd @ kd.transpose(1, 2)) * (1 / math.sqrt(q.shape[3]) if scale is None else float(torch.tensor(scale, dtype=torch.float32)))
        if bias is not None:
            s = s + bias[0].double()
        if mask:
            sq, skv = s.shape[-2:]
            i = torch.arange(sq, device=s.device)[:, None]
            j = torch.arange(skv, device=s.device)[None, :]
            s = s.masked_fill(j > i + (skv - sq if mask == "BottomRight" else 0), float("-inf"))
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
    q, k, v = rnd(c.b, c.s, c.n, c.h), rnd(c.b, c.skv, c.kv, c.h), rnd(c.b, c.skv, c.kv, c.h)
    return [q, k, v] + ([bias] if c.bias else []), q, k, v, bias


def sdpa(q, k, v, bias, causal):
    import torch.nn.functional as F

    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    gqa = k.shape[2] != q.shape[2]
    if causal and q.shape[1] == k.shape[1] and bias is None:
        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=True, enable_gqa=gqa)
    return F.scaled_dot_product_attention(qt, kt, vt, attn_mask=bias, enable_gqa=gqa)


def formula(q, k, v, bias, causal: bool):
    """softmax(q k^T / sqrt(H) + bias, BottomRight-masked) v in BHSD, as a user writes it
    (what torch.compile is timed on)."""
    import torch

    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    if kt.shape[1] != qt.shape[1]:
        kt = kt.repeat_interleave(qt.shape[1] // kt.shape[1], 1)
        vt = vt.repeat_interleave(qt.shape[1] // vt.shape[1], 1)
    s = (qt @ kt.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if bias is not None:
        s = s + bias
    if causal:
        sq, skv = s.shape[-2:]
        keep = torch.ones(sq, skv, dtype=torch.bool, device=s.device).tril(skv - sq)
        s = s.masked_fill(~keep, float("-inf"))
    return (torch.softmax(s.float(), -1).to(q.dtype) @ vt).transpose(1, 2)


def check_and_time(lib, symbol, c: Case, gen, timing: bool, compiled) -> dict:
    import torch

    args, q, k, v, bias = inputs(c, gen)
    out = torch.full((c.b, c.s, c.n, c.h), float("nan"), device="cuda", dtype=q.dtype)
    lib[symbol](*args, out=out)
    torch.cuda.synchronize()
    ref = reference(q, k, v, bias, c.mask, c.scale)
    rms = max(float(ref.pow(2).mean().sqrt()), 1e-3)
    err = float((out.double() - ref).abs().max()) / rms
    floor = float((ref.to(q.dtype).double() - ref).abs().max()) / rms
    ok = not torch.isnan(out).any().item() and err <= max(TOL[c.dtype], 2 * floor)
    row = {"case": c.name, "symbol": symbol, "rel_err": err, "floor": floor, "ok": ok}
    del ref
    if timing and c.timed:
        t = time_graph(lambda: lib[symbol](*args, out=out))
        t_ref = time_graph(lambda: sdpa(q, k, v, bias, c.causal))
        row.update(ms=t, sdpa_ms=t_ref, tflops=c.flops() / t / 1e9, sdpa_tflops=c.flops() / t_ref / 1e9,
                   ratio=t_ref / t)
        if compiled is not None:
            try:
                fn = lambda: compiled(q, k, v, bias, c.causal)  # noqa: E731
                t_c = time_graph(fn)
                row.update(compile_ms=t_c, compile_tflops=c.flops() / t_c / 1e9)
            except Exception as e:  # an inductor failure must not stop the byocc measurements
                row["compile_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "bench" / "gpu" / "results" / "attn"))
    ap.add_argument("-j", "--jobs", type=int, default=16)
    ap.add_argument("--quick", action="store_true", help="f16, and bf16 for two shapes")
    ap.add_argument("--time-budget", type=float, default=300.0)
    ap.add_argument("--only", default="", help="a regular expression: run only the cases whose name it finds")
    ap.add_argument("--compile-budget", type=float, default=120.0,
                    help="seconds of the case loop after which torch.compile is no longer timed (0: never)")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("BYOCC_BENCH_WORK", ROOT / ".gpu_work")) / "attn"
    work.mkdir(parents=True, exist_ok=True)
    log = out / "build.log"
    log.write_text("")
    cs = [c for c in cases(args.quick) if re.search(args.only, c.name)]
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
    by_key, kernel_of = {}, {}
    for f in json.loads((d / "manifest.json").read_text())["functions"]:
        shapes = tuple(tuple(a["shape"]) for a in f["args"] if a["role"] != "workspace")
        by_key[(shapes, f["args"][0]["dtype"], f["steps"][0]["causal_mask"])] = f["symbol"]
        kernel_of[f["symbol"]] = "sm90" if f["steps"][0]["kernel"] != "simt" else "simt"
    gen = torch.Generator(device="cuda")
    gen.manual_seed(int(time.time()))
    compiled = None
    if args.compile_budget > 0:
        import torch._dynamo

        torch._dynamo.config.cache_size_limit = 64
        compiled = torch.compile(formula, dynamic=False)
    rows: list[dict] = []
    t_loop = time.perf_counter()
    for c in cs:
        timing = time.perf_counter() - t_start < args.time_budget
        with_compile = (compiled if c.name in COMPILE_CASES and time.perf_counter() - t_loop < args.compile_budget
                        else None)
        symbol = by_key[c.key()]
        try:
            row = check_and_time(lib, symbol, c, gen, timing, with_compile)
        except Exception as e:  # a failing call is a failed case, the others still run
            row = {"case": c.name, "symbol": symbol, "rel_err": float("nan"), "floor": float("nan"), "ok": False,
                   "error": f"{type(e).__name__}: {str(e)[:300]}"}
        row["kernel"] = kernel_of[symbol]
        rows.append(row)
        perf = (f"{row['ms'] * 1e3:9.1f} us {row['tflops']:7.1f} TFLOP/s  sdpa {row['sdpa_tflops']:7.1f}  "
                f"x{row['ratio']:.3f}") if "ms" in row else row.get(
                    "error", "(correctness only)" if not c.timed else "(not timed: time budget spent)")
        if "compile_tflops" in row:
            perf += f"  compile {row['compile_tflops']:7.1f}"
        print(f"{c.name:36s} {row['kernel']:4s} err {row['rel_err']:.2e} (floor {row['floor']:.1e}) "
              f"{'ok ' if row['ok'] else 'BAD'} {perf}", flush=True)
        write_results(out, rows, torch.cuda.get_device_name(), t_part, t_build)  # after every case
    bad = [r for r in rows if not r["ok"]]
    print(f"correctness: {len(rows) - len(bad)} of {len(rows)} ok")
    return 1 if bad else 0


def write_results(out: Path, rows: list[dict], device: str, t_part: float, t_build: float) -> None:
    (out / "attn_results.json").write_text(json.dumps({"rows": rows, "device": device,
                                                       "partition_s": t_part, "build_s": t_build}, indent=1))
    lines = ["| case | kernel | err / rms | byocc us | TFLOP/s | SDPA TFLOP/s | x SDPA | torch.compile TFLOP/s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        perf = (f"{r['ms'] * 1e3:.1f} | {r['tflops']:.1f} | {r['sdpa_tflops']:.1f} | {r['ratio']:.3f}"
                if "ms" in r else "- | - | - | -")
        comp = f"{r['compile_tflops']:.1f}" if "compile_tflops" in r else ("failed" if "compile_error" in r else "-")
        lines.append(f"| {r['case']} | {r['kernel']} | {r['rel_err']:.2e} | {perf} | {comp} |")
    (out / "attn_table.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
