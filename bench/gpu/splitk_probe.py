"""Probe of the decode-shape GEMM variants and the K-padding copy on the H200 (issue 19 item 2).

    python bench/gpu/splitk_probe.py --out $OUT [--jobs 16]

Builds one shared library from units byocc generates (kernels.emit_kernel, the split-K
reduction and padding units of byocc.backends.cuda.generic) and a small extern "C" shim that
fills byocc::GemmArgs the way the generated wrapper does (split-K: a batch of `splits` slices
of K into fp32 partials; then the reduction with bias + ReLU). From Python (torch), for
M in {1, 16, 64} x 4096 x 4096 (B "tn"): every variant checked against float64 on fresh
inputs (output poisoned with NaN) and timed under CUDA-graph replay (gpu_timing.time_graph):
the GEMM alone, the reduction alone, both (the wrapper's path), against relu(addmm). Also the
zero padding of 2000x1500 and 3000x1500 f16 to K = 1504 against torch's F.pad.

Variants: C7 (64x128 ping-pong 1x1, fp32 partials) with 1, 2, 4, 8 slices; 64x64 ping-pong
1x1 (fp32) with 1, 2, 4; 64x32 ping-pong 1x1 (fp32) with 1, 2; 64x32 and 64x64 ping-pong 1x1
with bias + ReLU fused (no split; 128 and 64 CTAs for N = 4096). Units off byocc's tile menu are emitted with the support check bypassed (as
sched_sweep.py does); one that fails to compile is reported and left out.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import ctypes
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_timing import time_graph  # noqa: E402

SHIM = r"""
#include <stdint.h>
#include <cuda_runtime.h>
#include "byocc_gemm.h"
#include "byocc_generic.cuh"
#include "byocc_internal.h"
namespace byocc {
%(decls)s
namespace generic {
int splitk_f32_f16_run(const void* parts, int64_t splits, int64_t slice, const Epilogue& e, void* out, int sm_count, cudaStream_t stream);
int pad_f16_run(const void* src, void* dst, int64_t batches, int64_t rows, int64_t cols, int64_t rows_p, int64_t cols_p, int sm_count, cudaStream_t stream);
}
}
#define PROBE_API __attribute__((visibility("default")))
extern "C" {
PROBE_API const char* probe_error() { return byocc_last_error(); }
// which: index into the units; fused units take bias and write f16 D directly (L = 1)
PROBE_API int probe_gemm(int which, int64_t M, int64_t N, int64_t K, int64_t S, const void* A, const void* B,
               const void* bias, void* D, void* ws, uint64_t ws_bytes, cudaStream_t stream) {
  byocc::GemmArgs g{};
  g.M = M; g.N = N; g.K = K / S; g.L = S;
  g.A = A; g.lda = K; g.batch_stride_a = K / S;
  g.B = B; g.ldb = K; g.batch_stride_b = K / S;
  g.D = D; g.ldd = N; g.batch_stride_d = M * N;
  g.bias = bias; g.batch_stride_bias = 0;
  g.device = 0; g.sm_count = 132;
  switch (which) {
%(cases)s
  }
  return -1;
}
PROBE_API int probe_reduce(const void* parts, int64_t S, int64_t M, int64_t N, const void* bias, void* out, cudaStream_t stream) {
  byocc::generic::Epilogue e{};
  e.rank = 2; e.shape[0] = M; e.shape[1] = N; e.act = 1;
  const int64_t bs[1] = {N};
  byocc::generic::broadcast_operand(&e.bias, bias, 2, e.shape, 1, bs);
  byocc::generic::absent_operand(&e.residual);
  return byocc::generic::splitk_f32_f16_run(parts, S, M * N, e, out, 132, stream);
}
PROBE_API int probe_pad(const void* src, void* dst, int64_t rows, int64_t cols, int64_t cols_p, cudaStream_t stream) {
  return byocc::generic::pad_f16_run(src, dst, 1, rows, cols, rows, cols_p, 132, stream);
}
}
"""


def variants():
    from byocc.backends.cutlass.kernels import EpilogueSpec
    from byocc.backends.cutlass.kernels import GemmKernelConfig

    base = dict(arch="sm90", dtype_a="float16", dtype_b="float16", dtype_c=None, accumulator="float32",
                b_layout="tn", align_a=8, align_b=8, align_c=0, cluster=(1, 1, 1), schedule="pingpong")
    f32 = dict(base, dtype_d="float32", align_d=4, epilogue=EpilogueSpec())
    fused = dict(base, dtype_d="float16", align_d=8, epilogue=EpilogueSpec(bias="per_column", act="relu"))
    return [
        ("C7", GemmKernelConfig(tile=(64, 128, 64), **f32), False, (1, 2, 4, 8)),
        ("T64x64", GemmKernelConfig(tile=(64, 64, 64), **f32), False, (1, 2, 4)),
        ("T64x32_fused", GemmKernelConfig(tile=(64, 32, 64), **fused), True, (1,)),
        ("T64x32", GemmKernelConfig(tile=(64, 32, 64), **f32), False, (1, 2)),
        ("T64x64_fused", GemmKernelConfig(tile=(64, 64, 64), **fused), True, (1,)),
    ]


def build(work: Path, jobs: int, log) -> tuple[Path | None, list]:
    from byocc.backends.cuda import common_sources
    from byocc.backends.cuda import generic
    from byocc.backends.cutlass import kernels
    from byocc.backends.toolchain import NVCC_ARCH_FLAGS
    from byocc.backends.toolchain import NVCC_COMMON_FLAGS
    from byocc.backends.toolchain import cutlass_include_dirs

    kernels.sm90_supports = lambda cfg: True  # off-menu tiles too
    srcs = [*common_sources(), generic.header_source(), generic.aux_header_source(),
            generic.splitk_unit("float16"), generic.pad_unit("float16")]
    for f in srcs:
        p = work / f.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f.text)
    incs = [f"-I{d}" for d in cutlass_include_dirs()] + [f"-I{work / 'src'}"]
    flags = [*NVCC_COMMON_FLAGS, "-Xcompiler=-fPIC"]
    jobs_list = []
    for name, cfg, fused, splits in variants():
        unit = kernels.emit_kernel(cfg)
        p = work / unit.path
        p.write_text(unit.text)
        jobs_list.append((name, cfg, fused, splits, p, NVCC_ARCH_FLAGS["sm90"]))
    light = [work / "src/runtime.cu", work / "src/kernels/generic_splitk_f32_f16.cu",
             work / "src/kernels/generic_pad_f16.cu"]

    def cc(src: Path, arch) -> tuple[Path, int, str]:
        obj = src.with_suffix(".o")
        proc = subprocess.run(["nvcc", *flags, *arch, *incs, "-c", str(src), "-o", str(obj)],
                              capture_output=True, text=True)
        return obj, proc.returncode, proc.stderr[-3000:]

    light_arch = ["-gencode=arch=compute_90a,code=sm_90a"]
    with cf.ThreadPoolExecutor(jobs) as pool:
        heavy = list(pool.map(lambda j: cc(j[4], j[5]), jobs_list))
        lights = list(pool.map(lambda s: cc(s, light_arch), light))
    ok = []
    objs = []
    for job, (obj, rc, err) in zip(jobs_list, heavy):
        log.write(f"== {job[0]} rc={rc}\n{err}\n")
        if rc == 0:
            ok.append(job)
            objs.append(obj)
        else:
            print(f"{job[0]}: compile failed (see probe_build.log)")
    for obj, rc, err in lights:
        log.write(f"== {obj.name} rc={rc}\n{err}\n")
        if rc:
            return None, []
        objs.append(obj)
    decls = "\n".join(f"int {j[1].prefix}_run(const GemmArgs&, void*, uint64_t, cudaStream_t);" for j in ok)
    cases = "\n".join(f"    case {i}: return byocc::{j[1].prefix}_run(g, ws, ws_bytes, stream);"
                      for i, j in enumerate(ok))
    shim = work / "shim.cu"
    shim.write_text(SHIM % {"decls": decls, "cases": cases})
    obj, rc, err = cc(shim, light_arch)
    log.write(f"== shim rc={rc}\n{err}\n")
    if rc:
        return None, []
    lib = work / "libprobe.so"
    proc = subprocess.run(["nvcc", "-shared", "-cudart", "shared", "-o", str(lib), *map(str, objs), str(obj)],
                          capture_output=True, text=True)
    log.write(f"== link rc={proc.returncode}\n{proc.stderr[-3000:]}\n")
    return (lib if proc.returncode == 0 else None), ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "probe_out"))
    ap.add_argument("--jobs", type=int, default=16)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = ROOT / ".gpu_work" / "splitk_probe"
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with open(out / "probe_build.log", "w") as log:
        lib_path, ok = build(work, args.jobs, log)
    print(f"built in {time.perf_counter() - t0:.0f} s: {[j[0] for j in ok]}", flush=True)
    if lib_path is None:
        return 1
    import torch
    import torch.nn.functional as F

    lib = ctypes.CDLL(str(lib_path))
    lib.probe_error.restype = ctypes.c_char_p
    vp, i64 = ctypes.c_void_p, ctypes.c_int64
    lib.probe_gemm.argtypes = [ctypes.c_int, i64, i64, i64, i64, vp, vp, vp, vp, vp, ctypes.c_uint64, vp]
    lib.probe_reduce.argtypes = [vp, i64, i64, i64, vp, vp, vp]
    lib.probe_pad.argtypes = [vp, vp, i64, i64, i64, vp]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(int(time.time()))
    rows = []
    n = k = 4096
    w = (torch.rand((n, k), generator=gen, device="cuda") * 2 - 1).half()
    b = (torch.rand((n,), generator=gen, device="cuda") * 2 - 1).half()
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    parts = torch.empty(16 * 64 * n, dtype=torch.float32, device="cuda")

    def stream():
        return torch.cuda.current_stream().cuda_stream

    for m in (1, 16, 64):
        x = (torch.rand((m, k), generator=gen, device="cuda") * 2 - 1).half()
        ref = torch.relu(x.double() @ w.double().t() + b.double())
        rms = ref.pow(2).mean().sqrt().item()
        flop = 2.0 * m * n * k
        t_addmm = time_graph(lambda: torch.relu(torch.addmm(b, x, w.t())))
        rows.append({"m": m, "variant": "relu(addmm)", "ms": t_addmm, "tflops": flop / t_addmm / 1e9})
        for idx, (name, _cfg, fused, splits_list, *_rest) in enumerate(ok):
            for s in splits_list:
                o = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")

                def gemm(s=s, o=o):
                    d = o.data_ptr() if fused else parts.data_ptr()
                    return lib.probe_gemm(idx, m, n, k, s, x.data_ptr(), w.data_ptr(), b.data_ptr(), d,
                                          ws.data_ptr(), ws.numel(), stream())

                def reduce(s=s, o=o):
                    return lib.probe_reduce(parts.data_ptr(), s, m, n, b.data_ptr(), o.data_ptr(), stream())

                def both(s=s, o=o):
                    rc = gemm(s, o)
                    return rc if fused or rc else reduce(s, o)

                row = {"m": m, "variant": name, "splits": s}
                rc = both()
                torch.cuda.synchronize()
                if rc:
                    row["error"] = f"rc {rc}: {lib.probe_error().decode()}"
                    rows.append(row)
                    print(row, flush=True)
                    continue
                err = (o.double() - ref).abs().max().item() / max(rms, 1e-3)
                row["ok"] = bool(torch.isfinite(o).all().item()) and err < 2e-2
                row["err"] = err
                row["ms"] = time_graph(both)
                row["tflops"] = flop / row["ms"] / 1e9
                row["x_addmm"] = t_addmm / row["ms"]
                if not fused:
                    row["gemm_ms"] = time_graph(gemm)
                    row["reduce_ms"] = time_graph(reduce)
                rows.append(row)
                print(json.dumps(row), flush=True)
    # zero padding of K: 2000x1500 and 3000x1500 -> 1504
    for r_, c_ in ((2000, 1500), (3000, 1500)):
        src = (torch.rand((r_, c_), generator=gen, device="cuda") * 2 - 1).half()
        dst = torch.full((r_, 1504), float("nan"), dtype=torch.float16, device="cuda")
        rc = lib.probe_pad(src.data_ptr(), dst.data_ptr(), r_, c_, 1504, stream())
        torch.cuda.synchronize()
        ok_pad = rc == 0 and torch.equal(dst, F.pad(src, (0, 4)))
        t_pad = time_graph(lambda: lib.probe_pad(src.data_ptr(), dst.data_ptr(), r_, c_, 1504, stream()))
        t_torch = time_graph(lambda: F.pad(src, (0, 4)))
        gbs = 2 * r_ * (c_ + 1504) / t_pad / 1e6
        row = {"pad": f"{r_}x{c_}->1504", "ok": ok_pad, "ms": t_pad, "GB/s": gbs, "torch_pad_ms": t_torch}
        rows.append(row)
        print(json.dumps(row), flush=True)
    (out / "probe.json").write_text(json.dumps(rows, indent=1))
    lines = ["| M | variant | splits | ok | total us | TFLOP/s | x addmm | GEMM us | reduce us |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "variant" in r and "ms" in r:
            lines.append(f"| {r['m']} | {r['variant']} | {r.get('splits', '')} | {r.get('ok', '')} | {r['ms'] * 1e3:.1f} | "
                         f"{r['tflops']:.1f} | {r.get('x_addmm', 1.0):.2f} | "
                         f"{r.get('gemm_ms', float('nan')) * 1e3:.1f} | {r.get('reduce_ms', float('nan')) * 1e3:.1f} |")
    for r in rows:
        if "pad" in r:
            lines.append(f"\npad {r['pad']}: ok {r['ok']}, {r['ms'] * 1e3:.1f} us ({r['GB/s']:.0f} GB/s), "
                         f"F.pad {r['torch_pad_ms'] * 1e3:.1f} us")
    (out / "probe.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
