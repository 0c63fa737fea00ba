"""Sweep of CUTLASS 3.x tile-scheduler settings for byocc's sm_90a GEMM units on the H200.

    python bench/gpu/sched_sweep.py --out $OUT [--jobs 16]

Takes the kernel unit byocc generates for f16 TN bias+ReLU (the hot path) and for the
wave-starved small-M shapes, makes variants that differ only in the scheduler arguments
(swizzle, raster order, stream-K / split-K decomposition) or the tile, compiles each into a
small timing program (`main()` appended to the unit), and prints TFLOP/s per shape, so the
selection rule (spec/backends.md 7.7) is chosen from measurements. Checks nothing numerically
(gemm_matrix.py does); only times (CUDA events, warm-up, median of 20).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

MAIN = r"""
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>

__global__ void fill_kernel(__half* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = (unsigned)(i * 2654435761u) ^ seed;
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    p[i] = __float2half(((h & 0xffff) / 32768.0f) - 1.0f);
  }
}

int main(int argc, char** argv) {
  const char* shapes = argv[1];  // "M,N,K;M,N,K;..."
  int dev = 0; cudaSetDevice(dev);
  int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  size_t maxe = size_t(16384) * 16384;
  __half *A, *B, *D, *bias; void* ws;
  cudaMalloc(&A, maxe * 2); cudaMalloc(&B, maxe * 2); cudaMalloc(&D, maxe * 2); cudaMalloc(&bias, 65536 * 2);
  cudaMalloc(&ws, size_t(256) << 20);
  fill_kernel<<<1024, 256>>>(A, maxe, 1); fill_kernel<<<1024, 256>>>(B, maxe, 2); fill_kernel<<<64, 256>>>(bias, 65536, 3);
  cudaDeviceSynchronize();
  char buf[4096]; snprintf(buf, sizeof buf, "%s", shapes);
  for (char* tok = strtok(buf, ";"); tok; tok = strtok(nullptr, ";")) {
    long long M, N, K; sscanf(tok, "%lld,%lld,%lld", &M, &N, &K);
    byocc::GemmArgs g{};
    g.M = M; g.N = N; g.K = K; g.L = 1;
    g.A = A; g.lda = K; g.B = B; g.ldb = K; g.bias = bias; g.D = D; g.ldd = N; g.ldc = N;
    g.device = dev; g.sm_count = sms;
    if (!byocc::UNIT_can_implement(g)) { printf("%lld,%lld,%lld,can_implement=false\n", M, N, K); continue; }
    uint64_t wsb = byocc::UNIT_workspace_bytes(g);
    int rc = 0;
    for (int i = 0; i < 5; ++i) rc |= byocc::UNIT_run(g, ws, size_t(256) << 20, 0);
    cudaDeviceSynchronize();
    if (rc) { printf("%lld,%lld,%lld,rc=%d %s\n", M, N, K, rc, byocc_last_error()); continue; }
    std::vector<float> t;
    int iters = (M * N * K > (1LL << 36)) ? 5 : 50;
    for (int r = 0; r < 21; ++r) {
      cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
      cudaEventRecord(a);
      for (int i = 0; i < iters; ++i) byocc::UNIT_run(g, ws, size_t(256) << 20, 0);
      cudaEventRecord(b); cudaEventSynchronize(b);
      float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms / iters);
    }
    std::sort(t.begin(), t.end());
    double tf = 2.0 * M * N * K / (t[10] * 1e-3) / 1e12;
    printf("%lld,%lld,%lld,%.4f ms,%.1f TFLOP/s,ws=%llu,err=%s\n", M, N, K, t[10], tf,
           (unsigned long long)wsb, cudaGetErrorString(cudaGetLastError()));
  }
  return 0;
}
"""

BIG = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 3072, 1024), (16384, 1024, 3072)]
SMALL = [(128, 4096, 4096), (1000, 1024, 520), (64, 4096, 4096), (256, 4096, 4096)]


def scheduler_lines(swizzle=None, raster=None, decomposition=None, splits=None) -> str:
    out = []
    if swizzle is not None:
        out.append(f"  arguments.scheduler.max_swizzle_size = {swizzle};")
    if raster is not None:
        out.append(f"  arguments.scheduler.raster_order = decltype(arguments.scheduler.raster_order)::{raster};")
    if decomposition is not None:
        out.append(f"  arguments.scheduler.decomposition_mode = decltype(arguments.scheduler.decomposition_mode)::{decomposition};")
    if splits is not None:
        out.append(f"  arguments.scheduler.splits = {splits};")
    return "\n".join(out)


def variants():
    from byocc.backends.cutlass.kernels import EpilogueSpec
    from byocc.backends.cutlass.kernels import GemmKernelConfig

    ep = EpilogueSpec(bias="per_column", act="relu")
    base = dict(arch="sm90", dtype_a="float16", dtype_b="float16", dtype_c=None, dtype_d="float16",
                accumulator="float32", b_layout="tn", align_a=8, align_b=8, align_c=8, align_d=8,
                epilogue=ep)
    c1 = GemmKernelConfig(tile=(128, 256, 64), cluster=(2, 1, 1), schedule="cooperative", **base)
    c2 = GemmKernelConfig(tile=(128, 128, 64), cluster=(1, 2, 1), schedule="cooperative", **base)
    c2sk = dataclasses.replace(c2, stream_k=True)
    c5sk = GemmKernelConfig(tile=(128, 64, 64), cluster=(1, 1, 1), schedule="cooperative", stream_k=True, **base)
    c3 = GemmKernelConfig(tile=(64, 128, 64), cluster=(1, 1, 1), schedule="pingpong", **base)
    out = []
    for sw in (1, 2, 4, 8):
        for r in ("AlongM", "AlongN"):
            out.append((f"C1_sw{sw}_{r}", c1, scheduler_lines(sw, r), BIG))
    out.append(("C2_sw8_heur", c2, scheduler_lines(8, None), BIG))
    out.append(("C1_c1x2_sw8", dataclasses.replace(c1, cluster=(1, 2, 1)), scheduler_lines(8, None), BIG))
    for name, cfg in (("C2sk", c2sk), ("C5sk", c5sk)):
        out.append((f"{name}_heur", cfg, "", SMALL))
        out.append((f"{name}_streamk", cfg, scheduler_lines(None, None, "StreamK"), SMALL))
        for s in (2, 4, 8):
            out.append((f"{name}_splitk{s}", cfg, scheduler_lines(None, None, "SplitK", s), SMALL))
    out.append(("C3_pingpong", c3, "", SMALL))
    out.append(("C2_plain", c2, "", SMALL))
    return out


def make_program(name, cfg, sched, work: Path) -> Path:
    from byocc.backends.cutlass import kernels

    kernels.sm90_supports = lambda cfg: True  # the sweep tries tiles off the menu too
    emit_kernel = kernels.emit_kernel

    src = emit_kernel(cfg)
    text = src.text
    unit = f"gemm_{cfg.hash}"
    anchor = "  auto& fusion = arguments.epilogue.thread;"
    if sched:
        if anchor not in text:
            raise RuntimeError(f"{name}: no anchor for the scheduler arguments")
        text = text.replace(anchor, sched + "\n" + anchor, 1)
    text += MAIN.replace("UNIT_", unit + "_")
    path = work / f"{name}.cu"
    path.write_text(text)
    return path


def prepare_work(name: str) -> tuple[Path, list[str], Path]:
    """``.gpu_work/<name>`` with byocc's common CUDA sources written under it, the include
    flags (CUTLASS's headers and those sources) its programs compile with, and the byocc
    runtime compiled for sm_90a (``runtime.o``) that they link."""
    from byocc.backends.cuda import common_sources
    from byocc.backends.toolchain import NVCC_ARCH_FLAGS
    from byocc.backends.toolchain import NVCC_COMMON_FLAGS
    from byocc.backends.toolchain import cutlass_include_dirs

    work = ROOT / ".gpu_work" / name
    src_dir = work / "src"
    src_dir.mkdir(parents=True, exist_ok=True)
    for f in common_sources():
        (work / f.path).write_text(f.text)
    runtime_o = work / "runtime.o"
    subprocess.run(["nvcc", *NVCC_COMMON_FLAGS, *NVCC_ARCH_FLAGS["sm90"], f"-I{src_dir}", "-c",
                    str(src_dir / "runtime.cu"), "-o", str(runtime_o)], check=True)
    return work, [f"-I{p}" for p in cutlass_include_dirs()] + [f"-I{src_dir}"], runtime_o


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "sweep_out"))
    ap.add_argument("--jobs", type=int, default=16)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from byocc.backends.toolchain import NVCC_ARCH_FLAGS
    from byocc.backends.toolchain import NVCC_COMMON_FLAGS

    work, incs, runtime_o = prepare_work("sweep")
    progs = []
    for n, c, s, shapes in variants():
        try:
            progs.append((n, make_program(n, c, s, work), shapes))
        except Exception as e:  # a tile outside the kernel menu
            print(f"{n}: skipped ({str(e)[:100]})")

    def build(item):
        name, path, shapes = item
        exe = path.with_suffix("")
        t0 = time.perf_counter()
        p = subprocess.run(["nvcc", *NVCC_COMMON_FLAGS, *NVCC_ARCH_FLAGS["sm90"], *incs, str(path),
                            str(runtime_o), "-o", str(exe)], capture_output=True, text=True)
        return name, exe, shapes, p.returncode, p.stderr[-3000:], time.perf_counter() - t0

    results = {}
    log = open(out / "sweep_build.log", "w")
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        built = list(pool.map(build, progs))
    for name, exe, shapes, rc, err, dt in built:
        log.write(f"== {name} rc={rc} {dt:.0f}s\n{err}\n")
        if rc != 0:
            results[name] = {"build_error": err[-800:]}
            print(f"{name}: build failed")
            continue
        spec = ";".join(f"{m},{n},{k}" for m, n, k in shapes)
        p = subprocess.run([str(exe), spec], capture_output=True, text=True, timeout=120)
        results[name] = p.stdout.strip().splitlines()
        print(name)
        for line in results[name]:
            print("   ", line)
    (out / "sweep.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
