"""conv2d + bias + ReLU on the ResNet-50 layer shapes through the CUTLASS backend, against
cuDNN (issue 19's conv targets).

One command on a machine with an NVIDIA GPU, nvcc, PyTorch and the `nvidia-cutlass` wheel:

    python bench/gpu/conv_bench.py --out $OUT [--jobs 16] [--batches 1,32]

1. writes one Relax module holding one function per case: `relu(conv2d(x, w) + b)` in NHWC /
   OHWI, f16, for the 16 ResNet-50 layer shapes (input H = W, C, K, R x R, stride; padding
   R // 2), the 7x7/2 stem (C = 3) and one grouped conv (ResNeXt's 3x3, 32 groups), at each
   batch,
2. partitions it with byocc (`byocc partition --backend cutlass -o DIR`) and builds the
   library (`byocc build DIR -j N`; one kernel unit per distinct configuration), timing both,
3. calls every entry point through byocc's native runner on fresh random inputs, the output
   poisoned with NaN first, against a float64 reference (`F.conv2d` on NCHW-permuted
   doubles; relative max error = max|out-ref| / max(rms(ref), 1e-3) <= 2e-2),
4. times each case under CUDA-graph replay against cuDNN (`torch.backends.cudnn` default,
   channels-last tensors): the conv alone, and conv + bias + ReLU (PyTorch, unfused),
5. records which kernels a call launched (one call under torch.profiler: "sm90" for the
   CUTLASS 3.x implicit GEMM, "sm80" for the 2.x one, "gemm90"/"gemm80" for the GEMM kernels
   a 1x1 stride-1 conv runs on, "splitk" for their split-K reduction, "pad" for the stem's
   channel padding, "generic" for byocc's direct convolution),
6. prints a table with the geo-means the targets name (per batch: byocc, cuDNN conv alone,
   cuDNN conv+bias+ReLU over the 16 ResNet layers) and writes `results.json` under --out.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

#: (input H = W, C, K, R, stride) of the 16 ResNet-50 conv layers (issue 19).
RESNET50 = [
    (56, 64, 64, 1, 1), (56, 64, 64, 3, 1), (56, 64, 256, 1, 1), (56, 256, 64, 1, 1),
    (56, 128, 128, 3, 2), (28, 128, 128, 3, 1), (28, 128, 512, 1, 1), (28, 512, 128, 1, 1),
    (28, 256, 256, 3, 2), (14, 256, 256, 3, 1), (14, 256, 1024, 1, 1), (14, 1024, 256, 1, 1),
    (14, 512, 512, 3, 2), (7, 512, 512, 3, 1), (7, 512, 2048, 1, 1), (7, 2048, 512, 1, 1),
]
STEM = (224, 3, 64, 7, 2)
GROUPED = (56, 128, 128, 3, 1, 32)  # ResNeXt-50 32x4d's first grouped 3x3


@dataclass
class Case:
    name: str
    kind: str  # resnet | stem | grouped
    n: int
    h: int
    c: int
    k: int
    r: int
    stride: int
    groups: int = 1
    symbol: str | None = None
    padding: int | None = None  # None: R // 2

    @property
    def pad(self) -> int:
        return self.r // 2 if self.padding is None else self.padding

    @property
    def p(self) -> int:
        return (self.h + 2 * self.pad - self.r) // self.stride + 1

    @property
    def flop(self) -> float:
        return 2.0 * self.n * self.p * self.p * self.k * self.r * self.r * (self.c // self.groups)


def cases(batches) -> list[Case]:
    out = []
    for n in batches:
        for i, (h, c, k, r, s) in enumerate(RESNET50):
            out.append(Case(f"l{i:02d}_b{n}", "resnet", n, h, c, k, r, s))
        out.append(Case(f"stem_b{n}", "stem", n, *STEM))
        h, c, k, r, s, g = GROUPED
        out.append(Case(f"grouped_b{n}", "grouped", n, h, c, k, r, s, g))
        # the stem after a space-to-depth by its stride 2 (224 + 2*3 padded -> 115 x 115 x 12
        # channels, 7x7 -> 4x4 taps, stride 1, no padding), channels padded to 16 (sm_90a, k-tile
        # 16) or left at 12 (sm_80, alignment 4): what a space-to-depth stem would run
        out.append(Case(f"stem_s2d16_b{n}", "probe", n, 115, 16, 64, 4, 1, padding=0))
        out.append(Case(f"stem_s2d12_b{n}", "probe", n, 115, 12, 64, 4, 1, padding=0))
    return out


def case_function(c: Case) -> str:
    f16 = '"float16"'
    x, w, b = (f"R.Tensor(({c.n}, {c.h}, {c.h}, {c.c}), dtype={f16})",
               f"R.Tensor(({c.k}, {c.r}, {c.r}, {c.c // c.groups}), dtype={f16})",
               f"R.Tensor((1, 1, 1, {c.k}), dtype={f16})")
    return (f"    @R.function\n    def {c.name}(x: {x}, w: {w}, b: {b}):\n"
            "        with R.dataflow():\n"
            f"            y = R.nn.conv2d(x, w, strides=[{c.stride}, {c.stride}], padding=[{c.pad}, {c.pad}, {c.pad}, "
            f"{c.pad}], dilation=[1, 1], groups={c.groups}, data_layout=\"NHWC\", kernel_layout=\"OHWI\", "
            "out_layout=\"NHWC\", out_dtype=None)\n"
            "            z = R.add(y, b)\n"
            "            o = R.nn.relu(z)\n"
            "            R.output(o)\n"
            "        return o\n")


def module_text(cs: list[Case]) -> str:
    head = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"
    return head + "\n".join(case_function(c) for c in cs)


def inputs(c: Case, gen):
    import torch

    def rand(*shape):
        return (torch.rand(shape, generator=gen, device="cuda", dtype=torch.float32) * 2 - 1).to(torch.float16)
    return rand(c.n, c.h, c.h, c.c), rand(c.k, c.r, c.r, c.c // c.groups), rand(1, 1, 1, c.k)


def nchw(t):
    """The NCHW view of an NHWC (or OHWI) tensor: channels-last memory, what cuDNN takes."""
    return t.permute(0, 3, 1, 2)


def reference(c: Case, x, w, b):
    import torch
    import torch.nn.functional as F

    y = F.conv2d(nchw(x).double(), nchw(w).double(), b.reshape(-1).double(), stride=c.stride, padding=c.pad,
                 groups=c.groups)
    return torch.relu(y).permute(0, 2, 3, 1)


def rel_err(out, ref) -> float:
    o = out.double()
    if not bool(o.isfinite().all()):
        return float("inf")
    rms = ref.pow(2).mean().sqrt().item()
    return (o - ref).abs().max().item() / max(rms, 1e-3)


def launched(fn) -> str:
    """Which byocc kernels one call of ``fn`` launches (CUDA kernel names under torch.profiler)."""
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    kinds = []
    for n in names:
        gemm = "GemmUniversal" in n or "gemm::kernel" in n  # a 1x1 stride-1 conv runs as a GEMM step
        kind = ("gemm90" if gemm and "Sm90" in n else "gemm80" if gemm
                else "sm90" if "ConvUniversal" in n or "Sm90" in n else "sm80" if "ImplicitGemmConvolution" in n
                else "pad" if "pad_channels" in n else "splitk" if "splitk" in n.lower()
                else "generic" if "conv_kernel" in n else "simt" if "gemm_kernel" in n else None)
        if kind and kind not in kinds:
            kinds.append(kind)
    return "+".join(kinds) or "?"


def geomean(values) -> float | None:
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def main(argv=None) -> int:
    from gemm_matrix import find_symbols
    from gemm_matrix import run
    from gemm_matrix import time_graph

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "gpu_out"))
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--build-timeout", type=float, default=540.0)
    ap.add_argument("--only", default=None, help="a regular expression: only the cases whose name matches")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("BYOCC_BENCH_WORK", ROOT / ".gpu_work"))
    work.mkdir(parents=True, exist_ok=True)
    log = out / "conv_build.log"
    log.write_text("")
    cs = cases([int(b) for b in args.batches.split(",")])
    if args.only:
        import re

        cs = [c for c in cs if re.search(args.only, c.name)]
    results: dict = {"build": {}, "cases": [], "geomean": {}}
    model, d = work / "conv_bench.relax", work / "out_conv"
    text = module_text(cs)
    py = [sys.executable, "-m", "byocc"]
    if not (d / "manifest.json").exists() or not model.exists() or model.read_text() != text:
        model.write_text(text)
        p, dt = run(py + ["partition", str(model), "--backend", "cutlass", "-o", str(d)], log)
        results["build"]["partition_s"] = round(dt, 2)
        if p.returncode != 0:
            print(f"partition failed: {p.stderr[-3000:]}")
            (out / "results.json").write_text(json.dumps(results, indent=1))
            return 1
    find_symbols((d / "conv_bench.codegen.relax").read_text(), cs)
    p, dt = run(py + ["build", str(d), "-j", str(args.jobs)], log, timeout=args.build_timeout)
    results["build"].update(build_s=round(dt, 1), conv_units=len(list((d / "src" / "kernels").glob("conv_*.cu"))),
                            units=len(list((d / "src").rglob("*.cu"))))
    if p.returncode != 0:
        print(f"build failed ({dt:.0f}s): {p.stderr[-3000:]}")
        results["build"]["error"] = p.stderr[-4000:]
        (out / "results.json").write_text(json.dumps(results, indent=1))
        return 1
    import torch
    import torch.nn.functional as F

    from byocc.runtime import native

    lib = native.load(d)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(int(time.time()))
    for c in cs:
        row = {"case": c.name, "kind": c.kind, "N": c.n, "H": c.h, "C": c.c, "K": c.k, "R": c.r, "stride": c.stride,
               "groups": c.groups, "symbol": c.symbol}
        results["cases"].append(row)
        if c.symbol is None:
            row["status"] = "not offloaded"
            continue
        try:
            x, w, b = inputs(c, gen)
            o = torch.full((c.n, c.p, c.p, c.k), float("nan"), device="cuda", dtype=torch.float16)
            order = [a["name"] for a in lib.functions[c.symbol]["args"]]
            named = {"x": x, "w": w, "b": b}
            call_args = [named[n] for n in order]
            lib[c.symbol](*call_args, out=o)
            torch.cuda.synchronize()
            err = rel_err(o, reference(c, x, w, b))
            row.update(status="ok" if err <= 2e-2 else "WRONG", err=err)
            if row["status"] != "ok":
                continue
            try:
                row["kernel"] = launched(lambda: lib[c.symbol](*call_args, out=o))
            except Exception as e:  # noqa: BLE001 - the profiler is diagnostics only
                row["kernel"] = f"? ({type(e).__name__})"
            xc, wc, bv = nchw(x), nchw(w), b.reshape(-1)
            row["byocc_ms"] = time_graph(lambda: lib[c.symbol](*call_args, out=o,
                                                               stream=torch.cuda.current_stream().cuda_stream))
            row["cudnn_conv_ms"] = time_graph(lambda: F.conv2d(xc, wc, None, c.stride, c.pad, 1, c.groups))
            row["torch_conv_bias_relu_ms"] = time_graph(
                lambda: torch.relu(F.conv2d(xc, wc, bv, c.stride, c.pad, 1, c.groups)))
            row["byocc_tflops"] = c.flop / row["byocc_ms"] / 1e9
        except Exception as e:  # noqa: BLE001 - every case reports, the run goes on
            row.update(status="ERROR", error=f"{type(e).__name__}: {e}")
            traceback.print_exc()
    for n in sorted({c.n for c in cs}):
        rows = [r for r in results["cases"] if r["kind"] == "resnet" and r["N"] == n and "byocc_ms" in r]
        if len(rows) == len(RESNET50):
            g = {k: geomean(r[k] for r in rows) for k in ("byocc_ms", "cudnn_conv_ms", "torch_conv_bias_relu_ms")}
            g["byocc_vs_cudnn_conv"] = g["cudnn_conv_ms"] / g["byocc_ms"]
            g["byocc_vs_torch_unfused"] = g["torch_conv_bias_relu_ms"] / g["byocc_ms"]
            results["geomean"][f"batch{n}"] = g
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    print_table(results)
    return 0 if all(r.get("status") == "ok" for r in results["cases"]) else 1


def print_table(results) -> None:
    print(f"build: {results['build']}")
    print(f"{'case':12} {'N':>3} {'H':>4} {'C':>5} {'K':>5} {'R':>2} {'s':>2} {'g':>3} {'status':7} {'err':>9} "
          f"{'byocc ms':>9} {'cudnn ms':>9} {'torch cbr':>9} {'TFLOP/s':>8} kernel")
    for r in results["cases"]:
        def f(k, fmt="9.4f"):
            return format(r[k], fmt) if k in r else " " * int(fmt.split(".")[0])
        print(f"{r['case']:12} {r['N']:>3} {r['H']:>4} {r['C']:>5} {r['K']:>5} {r['R']:>2} {r['stride']:>2} "
              f"{r['groups']:>3} {r.get('status', ''):7} {f('err', '9.2e')} {f('byocc_ms')} {f('cudnn_conv_ms')} "
              f"{f('torch_conv_bias_relu_ms')} {f('byocc_tflops', '8.1f')} {r.get('kernel', '')}")
    for key, g in results["geomean"].items():
        print(f"geo-mean over the 16 ResNet-50 layers, {key}: byocc {g['byocc_ms']:.4f} ms, cuDNN conv alone "
              f"{g['cudnn_conv_ms']:.4f} ms ({g['byocc_vs_cudnn_conv']:.2f}x), PyTorch conv+bias+relu "
              f"{g['torch_conv_bias_relu_ms']:.4f} ms ({g['byocc_vs_torch_unfused']:.2f}x)")


if __name__ == "__main__":
    sys.exit(main())
