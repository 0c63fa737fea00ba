"""Configuration probe of byocc's sm_90a fused attention (``csrc/byocc_attention_sm90.cuh``).

Compiles one small shared library per kernel configuration (tile, schedule, mask) of
``byocc::attention::sm90::Config`` - the same fixed C++ the generated units include - and times
each on the bench shapes under CUDA-graph replay, next to ``F.scaled_dot_product_attention``
(flash), after checking its output (poisoned with NaN first, fresh random inputs) against a
float64 reference. It is how byocc's per-head-dim choice (``Tiles<kD>``: tiles and schedules)
is measured; the generated code is not involved.

    python bench/gpu/attn_probe.py build --work DIR [-j 8]     # compile (in parallel)
    python bench/gpu/attn_probe.py time --work DIR --out OUT   # check + time, table to OUT
"""

from __future__ import annotations

import argparse
import concurrent.futures
import ctypes
import functools
import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_timing import time_graph as _time_graph  # noqa: E402

time_graph = functools.partial(_time_graph, reps=5, iters=5, warm=2)

COOP = "cutlass::gemm::KernelTmaWarpSpecializedCooperative"
PINGPONG = "cutlass::gemm::KernelTmaWarpSpecializedPingpong"
MASKS = {"none": "kNoMask", "bottom_right": "kBottomRight"}

#: (name, head dim, tile, schedule, mask, shapes (b, s, n)); results/h200_attn_probe.md has
#: the H200 numbers of the first six but h64_coop_128x128; h200_attn_probe2.md the rest.
VARIANTS = [
    ("h64_coop_128x64", 64, (128, 64, 64), COOP, "none", [(8, 512, 16), (8, 2048, 16)]),
    ("h64_coop_128x128", 64, (128, 128, 64), COOP, "none", [(8, 512, 16), (8, 2048, 16)]),
    ("h64_pingpong_128x64", 64, (128, 64, 64), PINGPONG, "none", [(8, 512, 16), (8, 2048, 16)]),
    ("h64_causal_coop_128x64_grid", 64, (128, 64, 64), COOP, "bottom_right", [(8, 512, 16), (8, 2048, 16)]),
    ("h128_causal_coop_grid", 128, (128, 128, 128), COOP, "bottom_right", [(8, 2048, 16), (1, 4096, 32)]),
    ("h128_pingpong_128x128", 128, (128, 128, 128), PINGPONG, "none", [(8, 2048, 16), (1, 4096, 32)]),
    # head dim 64 with 128-wide key tiles (as CUTLASS's 88_hopper_fmha takes for d = 64), and
    # the causal d = 128 case with 64-wide key tiles (less masked work on the diagonal)
    ("h64_pingpong_128x128", 64, (128, 128, 64), PINGPONG, "none", [(8, 512, 16), (8, 2048, 16)]),
    ("h64_causal_coop_128x128_grid", 64, (128, 128, 64), COOP, "bottom_right", [(8, 512, 16), (8, 2048, 16)]),
    ("h128_causal_coop_128x64_grid", 128, (128, 64, 128), COOP, "bottom_right", [(8, 2048, 16), (1, 4096, 32)]),
]


def unit_text(d: int, tile, schedule: str, mask: str) -> str:
    shape = ", ".join(f"cute::_{t}" for t in tile)
    return f"""// attn_probe.py: one configuration of byocc's sm_90a attention.
#include "byocc_attention_sm90.cuh"

using namespace byocc::attention;

extern "C" __attribute__((visibility("default"))) int probe_run(const Params* p, void* lse, uint64_t lse_bytes,
                                                               cudaStream_t stream) {{
  using K = sm90::Config<cutlass::half_t, cute::Shape<{shape}>, {schedule}, {MASKS[mask]}>;
  return sm90::run_kernel<K, cutlass::half_t, {d}>(*p, lse, lse_bytes, stream);
}}
"""


def build(work: Path, jobs: int) -> int:
    from byocc.backends.toolchain import NVCC_ARCH_FLAGS
    from byocc.backends.toolchain import NVCC_COMMON_FLAGS
    from byocc.backends.toolchain import find_cutlass
    from byocc.backends.toolchain import find_nvcc

    work.mkdir(parents=True, exist_ok=True)
    csrc = ROOT / "byocc" / "backends" / "cuda" / "csrc"
    flags = [*NVCC_COMMON_FLAGS, *NVCC_ARCH_FLAGS["sm90"], f"-I{csrc}", *(f"-I{d}" for d in find_cutlass() or ())]
    nvcc = find_nvcc()

    def one(v) -> tuple[str, int, float, str]:
        name, d, tile, schedule, mask, _ = v
        src = work / f"{name}.cu"
        src.write_text(unit_text(d, tile, schedule, mask))
        t0 = time.perf_counter()
        p = subprocess.run([nvcc, *flags, "-shared", "-cudart", "shared", str(src), "-o", str(work / f"{name}.so")],
                           capture_output=True, text=True)
        return name, p.returncode, time.perf_counter() - t0, p.stderr[-2000:]

    rc = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, code, secs, err in pool.map(one, VARIANTS):
            print(f"probe build {name}: rc {code}, {secs:.1f} s", flush=True)
            if code != 0:
                print(err)
                rc = 1
    return rc


class CParams(ctypes.Structure):
    """byocc::attention::Params (csrc/byocc_attention.h), field for field."""

    _fields_ = [("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p), ("bias", ctypes.c_void_p),
                ("out", ctypes.c_void_p), ("batch", ctypes.c_int64), ("seq_q", ctypes.c_int64),
                ("seq_kv", ctypes.c_int64), ("heads", ctypes.c_int64), ("kv_heads", ctypes.c_int64),
                ("head_dim", ctypes.c_int64), ("head_dim_v", ctypes.c_int64),
                ("q_stride", ctypes.c_int64 * 3), ("k_stride", ctypes.c_int64 * 3), ("v_stride", ctypes.c_int64 * 3),
                ("out_stride", ctypes.c_int64 * 3), ("bias_stride", ctypes.c_int64 * 4),
                ("scale", ctypes.c_float), ("mask", ctypes.c_int32), ("window", ctypes.c_int64)]


def measure(lib, name: str, d: int, mask: str, shape, gen) -> dict:
    import torch
    import torch.nn.functional as F
    from attn_bench import reference

    b, s, n = shape
    q, k, v = (torch.randn(b, s, n, d, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    out = torch.full_like(q, float("nan"))
    lse = torch.empty(b * n * s, device="cuda", dtype=torch.float32)
    p = CParams()
    p.q, p.k, p.v, p.bias, p.out = q.data_ptr(), k.data_ptr(), v.data_ptr(), None, out.data_ptr()
    p.batch, p.seq_q, p.seq_kv, p.heads, p.kv_heads, p.head_dim, p.head_dim_v = b, s, s, n, n, d, d
    for field in ("q_stride", "k_stride", "v_stride", "out_stride"):
        getattr(p, field)[:] = [s * n * d, n * d, d]
    p.scale, p.mask, p.window = 1.0 / math.sqrt(d), {"none": 0, "bottom_right": 2}[mask], 0
    fn = lib.probe_run
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(CParams), ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p]

    def call():
        rc = fn(ctypes.byref(p), lse.data_ptr(), lse.numel() * 4, torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"{name}: probe_run returned {rc}")

    call()
    torch.cuda.synchronize()
    ref = reference(q, k, v, None, "BottomRight" if mask != "none" else None)
    rms = float(ref.pow(2).mean().sqrt())
    err = float((out.double() - ref).abs().max()) / rms
    del ref
    ok = not torch.isnan(out).any().item() and err < 2e-2
    flops = 4.0 * b * n * s * s * d * (0.5 if mask != "none" else 1.0)
    t = time_graph(call)
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    t_ref = time_graph(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=mask != "none"))
    return {"variant": name, "shape": [b, s, n, d], "mask": mask, "rel_err": err, "ok": ok, "us": t * 1e3,
            "tflops": flops / t / 1e9, "sdpa_tflops": flops / t_ref / 1e9, "ratio": t_ref / t}


def time_all(work: Path, out: Path) -> int:
    import torch

    out.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(int(time.time()))
    rows = []
    for name, d, _tile, _schedule, mask, shapes in VARIANTS:
        so = work / f"{name}.so"
        if not so.is_file():
            print(f"{name}: not built")
            continue
        lib = ctypes.CDLL(str(so))
        for shape in shapes:
            try:
                row = measure(lib, name, d, mask, shape, gen)
            except Exception as e:  # one failing configuration must not hide the others
                row = {"variant": name, "shape": [*shape, d], "mask": mask, "ok": False, "error": str(e)[:300]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    (out / "attn_probe.json").write_text(json.dumps(rows, indent=1))
    lines = ["| variant | shape (b, s, n, h) | mask | err / rms | us | TFLOP/s | SDPA TFLOP/s | x SDPA |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "us" in r:
            lines.append(f"| {r['variant']} | {tuple(r['shape'])} | {r['mask']} | {r['rel_err']:.2e} | {r['us']:.1f} | "
                         f"{r['tflops']:.1f} | {r['sdpa_tflops']:.1f} | {r['ratio']:.3f} |")
        else:
            lines.append(f"| {r['variant']} | {tuple(r['shape'])} | {r['mask']} | failed: {r.get('error', '')} | | | | |")
    (out / "attn_probe.md").write_text("\n".join(lines) + "\n")
    return 0 if all(r["ok"] for r in rows) else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("build", "time"))
    ap.add_argument("--work", default="/tmp/byocc_gpu/attn_probe")
    ap.add_argument("--out", default=str(ROOT / "bench" / "gpu" / "results" / "attn_probe"))
    ap.add_argument("-j", "--jobs", type=int, default=8)
    ap.add_argument("--only", default="", help="a regular expression: only the variants whose name it finds")
    args = ap.parse_args(argv)
    VARIANTS[:] = [v for v in VARIANTS if re.search(args.only, v[0])]
    return build(Path(args.work), args.jobs) if args.what == "build" else time_all(Path(args.work), Path(args.out))


if __name__ == "__main__":
    sys.exit(main())
