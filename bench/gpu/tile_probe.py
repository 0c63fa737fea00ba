"""H200 probe for byocc's sm_90a GEMM tile rule: burst vs sustained rate, clocks and power.

    python bench/gpu/tile_probe.py --out $OUT [--jobs 16] [--set big,small] [--no-ncu]

For f16 bias+ReLU (the hot composite), builds one timing program per kernel variant (tile,
cluster, schedule, stream-K; B layout) from the unit byocc generates, with the tile
scheduler's arguments (swizzle, raster order, decomposition, splits) read at run time, so
one compile serves several scheduler settings. Each timed item is a CUDA graph of n launches
(n so one replay is ~5 ms of work):

* burst: after 0.5 s idle, three replays, each timed with events (the unthrottled rate);
* sustained: replays back to back for S seconds, an event after each; the rate of the last
  second and a series of 250 ms windows (the rate once the power limiter has settled).

A sampler thread reads the SM clock, power draw, temperature and clock-event reasons through
NVML (read only: nothing is set) every 20 ms, and each item reports the means over its
sustained phase. The same protocol times torch.matmul (f16, bf16) and relu(addmm) as
ceilings, torch.profiler names cuBLAS's kernels for the small shapes, and ncu (clock control
none) reads one launch of byocc's current 8192^3 kernel. Checks nothing numerically
(gemm_matrix.py does). Prints a summary table last; full JSON in --out.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

KNOBS = r"""
namespace probe {
inline int swizzle = 0;   // 0: leave CUTLASS's default
inline int raster = -1;   // -1: default; else RasterOrderOptions (0 heuristic, 1 AlongM, 2 AlongN)
inline int decomp = -1;   // stream-K units: DecompositionMode (0 heur, 1 DP, 2 SplitK, 3 StreamK)
inline int splits = 0;
}  // namespace probe
"""

SCHED = """\
  if (probe::swizzle > 0) arguments.scheduler.max_swizzle_size = probe::swizzle;
  if (probe::raster >= 0)
    arguments.scheduler.raster_order = static_cast<decltype(arguments.scheduler.raster_order)>(probe::raster);
"""
SCHED_SK = """\
  if (probe::decomp >= 0)
    arguments.scheduler.decomposition_mode = static_cast<decltype(arguments.scheduler.decomposition_mode)>(probe::decomp);
  if (probe::splits > 0) arguments.scheduler.splits = probe::splits;
"""

MAIN = r"""
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <string>
#include <vector>

static double wall() { timespec ts; clock_gettime(CLOCK_REALTIME, &ts); return ts.tv_sec + ts.tv_nsec * 1e-9; }

__global__ void fill_kernel(__half* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = (unsigned)(i * 2654435761u) ^ (seed * 0x9e3779b9u);
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15; h *= 0x27d4eb2du; h ^= h >> 16;
    p[i] = __float2half(((h & 0xffffff) / 8388608.0f) - 1.0f);  // uniform [-1, 1)
  }
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("{\"error\": \"%s at %d\"}\n", cudaGetErrorString(e_), __LINE__); exit(2); } } while (0)

int main(int argc, char** argv) {
  const char* mode = argv[1];   // "time" or "once"
  const char* items = argv[2];  // "M,N,K,swizzle,raster,decomp,splits,sustain_s;..."
  int dev = 0; CK(cudaSetDevice(dev));
  int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  size_t maxe = size_t(8192) * 8192;
  __half *A, *B, *D, *bias; void* ws; size_t wsb_max = size_t(512) << 20;
  CK(cudaMalloc(&A, maxe * 2)); CK(cudaMalloc(&B, maxe * 2)); CK(cudaMalloc(&D, maxe * 2));
  CK(cudaMalloc(&bias, 65536 * 2)); CK(cudaMalloc(&ws, wsb_max));
  fill_kernel<<<1024, 256>>>(A, maxe, 1); fill_kernel<<<1024, 256>>>(B, maxe, 2); fill_kernel<<<64, 256>>>(bias, 65536, 3);
  CK(cudaDeviceSynchronize());
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::string all(items);
  size_t pos = 0;
  while (pos < all.size()) {
    size_t end = all.find(';', pos); if (end == std::string::npos) end = all.size();
    std::string tok = all.substr(pos, end - pos); pos = end + 1;
    long long M, N, K; int swz, ras, dec, spl; double sustain;
    if (sscanf(tok.c_str(), "%lld,%lld,%lld,%d,%d,%d,%d,%lf", &M, &N, &K, &swz, &ras, &dec, &spl, &sustain) != 8) continue;
    probe::swizzle = swz; probe::raster = ras; probe::decomp = dec; probe::splits = spl;
    byocc::GemmArgs g{};
    g.M = M; g.N = N; g.K = K; g.L = 1;
    g.A = A; g.lda = K; g.B = B; g.ldb = LDB; g.bias = bias; g.D = D; g.ldd = N; g.ldc = N;
    g.device = dev; g.sm_count = sms;
    printf("{\"item\": \"%s\"", tok.c_str());
    if (!byocc::UNIT_can_implement(g)) { printf(", \"error\": \"can_implement=false\"}\n"); continue; }
    uint64_t wsb = byocc::UNIT_workspace_bytes(g);
    if (wsb > wsb_max) { printf(", \"error\": \"workspace %llu\"}\n", (unsigned long long)wsb); continue; }
    int rc = 0;
    for (int i = 0; i < 3; ++i) rc |= byocc::UNIT_run(g, ws, wsb_max, s);
    CK(cudaStreamSynchronize(s));
    if (rc) { printf(", \"error\": \"rc=%d %s\"}\n", rc, byocc_last_error()); continue; }
    if (!strcmp(mode, "once")) { byocc::UNIT_run(g, ws, wsb_max, s); CK(cudaStreamSynchronize(s)); printf("}\n"); continue; }
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    cudaEventRecord(e0, s); byocc::UNIT_run(g, ws, wsb_max, s); cudaEventRecord(e1, s); CK(cudaEventSynchronize(e1));
    float t1; cudaEventElapsedTime(&t1, e0, e1);
    int n = std::max(1, std::min(400, int(5.0 / std::max(t1, 0.001f))));
    cudaGraph_t graph; cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < n; ++i) rc |= byocc::UNIT_run(g, ws, wsb_max, s);
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaGraphLaunch(exec, s)); CK(cudaStreamSynchronize(s));
    double flop = 2.0 * M * N * K;
    // burst: after idle, three replays
    usleep(500000);
    printf(", \"n\": %d, \"ws\": %llu, \"burst\": [", n, (unsigned long long)wsb);
    for (int r = 0; r < 3; ++r) {
      cudaEventRecord(e0, s); cudaGraphLaunch(exec, s); cudaEventRecord(e1, s); CK(cudaEventSynchronize(e1));
      float ms; cudaEventElapsedTime(&ms, e0, e1);
      printf("%s%.1f", r ? ", " : "", flop * n / (ms * 1e-3) / 1e12);
    }
    printf("]");
    // sustained: replays back to back, an event after each
    int reps = std::max(3, int(sustain * 1000.0 / (t1 * n)));
    reps = std::min(reps, 4000);
    std::vector<cudaEvent_t> ev(reps + 1);
    for (auto& e : ev) cudaEventCreate(&e);
    double w0 = wall();
    cudaEventRecord(ev[0], s);
    for (int r = 0; r < reps; ++r) { cudaGraphLaunch(exec, s); cudaEventRecord(ev[r + 1], s); }
    CK(cudaEventSynchronize(ev[reps]));
    double w1 = wall();
    std::vector<float> cum(reps + 1, 0.f);
    for (int r = 1; r <= reps; ++r) cudaEventElapsedTime(&cum[r], ev[0], ev[r]);
    float total = cum[reps];
    // last second (or last half when shorter)
    float tail = std::min(1000.f, total / 2);
    int r0 = reps; while (r0 > 0 && total - cum[r0 - 1] <= tail) --r0;
    double rate_tail = flop * n * (reps - r0) / ((total - cum[r0]) * 1e-3) / 1e12;
    printf(", \"t_start\": %.3f, \"t_end\": %.3f, \"sustained_ms\": %.1f, \"rate_tail\": %.1f, \"series\": [",
           w1 - total * 1e-3, w1, total, rate_tail);
    int last = 0; bool first = true;
    for (int r = 1; r <= reps; ++r) {
      if (cum[r] - cum[last] >= 250.f || r == reps) {
        printf("%s%.1f", first ? "" : ", ", flop * n * (r - last) / ((cum[r] - cum[last]) * 1e-3) / 1e12);
        first = false; last = r;
      }
    }
    printf("], \"rc\": %d, \"err\": \"%s\"}\n", rc, cudaGetErrorString(cudaGetLastError()));
    fflush(stdout);
    (void)w0;
    for (auto& e : ev) cudaEventDestroy(e);
    cudaGraphExecDestroy(exec); cudaGraphDestroy(graph);
  }
  return 0;
}
"""

BIG = [(8192, 8192, 8192, 3.0), (4096, 4096, 4096, 1.0), (16384, 3072, 1024, 1.0),
       (16384, 1024, 3072, 1.0)]
SMALL = [(128, 4096, 4096, 0.5), (1000, 1024, 520, 0.5)]
#: ResNet-50's memory-bound 1x1 convs at batch 32 as GEMMs (M = 32*H*W, N = K_out, K = C_in):
#: 56x56 C64->K64, C64->K256, C256->K64, 28x28 C128->K512 (--set pointwise).
POINTWISE = [(100352, 64, 64, 0.3), (100352, 256, 64, 0.3), (100352, 64, 256, 0.3),
             (25088, 512, 128, 0.3)]


@dataclasses.dataclass
class Variant:
    name: str
    tile: tuple
    cluster: tuple
    schedule: str
    stream_k: bool = False
    b_layout: str = "tn"
    shapes: list = dataclasses.field(default_factory=list)
    knobs: list = dataclasses.field(default_factory=lambda: [(0, -1, -1, 0)])


def variants(sets) -> list[Variant]:
    out = []
    if "big" in sets:
        big = [
            ("B0_C1_128x256_2x1_coop", (128, 256, 64), (2, 1, 1), "cooperative"),
            ("B1_128x256_1x2_coop", (128, 256, 64), (1, 2, 1), "cooperative"),
            ("B2_128x256_1x1_coop", (128, 256, 64), (1, 1, 1), "cooperative"),
            ("B3_256x128_1x2_coop", (256, 128, 64), (1, 2, 1), "cooperative"),
            ("B4_256x128_2x1_coop", (256, 128, 64), (2, 1, 1), "cooperative"),
            ("B5_128x128_2x1_pp", (128, 128, 64), (2, 1, 1), "pingpong"),
            ("B6_128x128_1x2_pp", (128, 128, 64), (1, 2, 1), "pingpong"),
        ]
        for name, t, c, s in big:
            knobs = [(0, -1, -1, 0)]
            if name.startswith("B0"):
                knobs += [(4, 1, -1, 0), (8, 2, -1, 0)]
            out.append(Variant(name, t, c, s, shapes=BIG, knobs=knobs))
    if "small" in sets:
        rast = [(0, -1, -1, 0), (0, 1, -1, 0), (0, 2, -1, 0)]
        small = [
            ("S0_C3_64x128_1x1_pp", (64, 128, 64), (1, 1, 1), "pingpong", False, "tn", rast),
            ("S1_64x128_2x1_pp", (64, 128, 64), (2, 1, 1), "pingpong", False, "tn", rast),
            ("S2_64x128_1x2_pp", (64, 128, 64), (1, 2, 1), "pingpong", False, "tn", rast),
            ("S4_64x64_2x1_pp", (64, 64, 64), (2, 1, 1), "pingpong", False, "tn", rast),
            ("S5_64x128x128_1x1_pp", (64, 128, 128), (1, 1, 1), "pingpong", False, "tn", rast),
            ("S6_128x64_1x1_coop_sk", (128, 64, 64), (1, 1, 1), "cooperative", True, "tn",
             [(0, -1, -1, 0), (0, -1, 1, 0), (0, -1, 2, 2), (0, -1, 3, 0)]),
            ("S0nn_C3_64x128_1x1_pp", (64, 128, 64), (1, 1, 1), "pingpong", False, "nn", rast[:1]),
            ("S1nn_64x128_2x1_pp", (64, 128, 64), (2, 1, 1), "pingpong", False, "nn", rast[:1]),
        ]
        for name, t, c, s, sk, lay, knobs in small:
            out.append(Variant(name, t, c, s, sk, lay, SMALL, knobs))
    if "pointwise" in sets:
        pointwise = [
            ("P0_C6_128x128_2x1_pp", (128, 128, 64), (2, 1, 1), "pingpong"),
            ("P1_C5_64x64_2x1_pp", (64, 64, 64), (2, 1, 1), "pingpong"),
            ("P2_128x64_2x1_pp", (128, 64, 64), (2, 1, 1), "pingpong"),
            ("P3_128x64_1x1_pp", (128, 64, 64), (1, 1, 1), "pingpong"),
            ("P4_128x64_2x1_coop", (128, 64, 64), (2, 1, 1), "cooperative"),
            ("P5_256x64_1x1_coop", (256, 64, 64), (1, 1, 1), "cooperative"),
            ("P6_C3_64x128_2x1_pp", (64, 128, 64), (2, 1, 1), "pingpong"),
            ("P7_256x128_1x1_coop", (256, 128, 64), (1, 1, 1), "cooperative"),
        ]
        for name, t, c, s in pointwise:
            out.append(Variant(name, t, c, s, shapes=POINTWISE))
    return out


def make_program(v: Variant, work: Path) -> Path:
    from byocc.backends.cutlass import kernels

    ep = kernels.EpilogueSpec(bias="per_column", act="relu")
    cfg = kernels.GemmKernelConfig(
        arch="sm90", dtype_a="float16", dtype_b="float16", dtype_c=None, dtype_d="float16",
        accumulator="float32", b_layout=v.b_layout, align_a=8, align_b=8, align_c=0, align_d=8,
        tile=v.tile, cluster=v.cluster, schedule=v.schedule, stream_k=v.stream_k, epilogue=ep)
    kernels.sm90_supports = lambda cfg: True  # the probe tries tiles off the menu too
    text = kernels.emit_kernel(cfg).text
    anchor = "  auto& fusion = arguments.epilogue.thread;"
    if anchor not in text:
        raise RuntimeError(f"{v.name}: no anchor for the scheduler arguments")
    text = text.replace(anchor, SCHED + (SCHED_SK if v.stream_k else "") + anchor, 1)
    first_include = text.index("#include")
    text = text[:first_include] + KNOBS + text[first_include:]
    ldb = "K" if v.b_layout == "tn" else "N"
    text += MAIN.replace("UNIT_", cfg.prefix + "_").replace("LDB", ldb)
    path = work / f"{v.name}.cu"
    path.write_text(text)
    return path


class Sampler(threading.Thread):
    """NVML readings (read only) every `period` s: (t, sm MHz, W, C, reasons bitmask)."""

    def __init__(self, period=0.02):
        super().__init__(daemon=True)
        self.period, self.rows, self.stop_flag, self.info = period, [], False, {}
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nv = pynvml
            self.h = pynvml.nvmlDeviceGetHandleByIndex(0)
            h = self.h
            for key, fn in (("name", lambda: pynvml.nvmlDeviceGetName(h)),
                            ("power_limit_w", lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000),
                            ("max_sm_mhz", lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)),
                            ("app_sm_mhz", lambda: pynvml.nvmlDeviceGetApplicationsClock(h, pynvml.NVML_CLOCK_SM)),
                            ("temp_slowdown_c", lambda: pynvml.nvmlDeviceGetTemperatureThreshold(
                                h, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN))):
                try:
                    self.info[key] = fn()
                except Exception as e:
                    self.info[key] = f"n/a ({e})"
        except Exception as e:  # no NVML: run without samples
            self.nv = None
            self.info = {"nvml_error": str(e)}

    def run(self):
        nv = self.nv
        if nv is None:
            return
        reasons = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nv.nvmlDeviceGetCurrentClocksThrottleReasons
        while not self.stop_flag:
            try:
                self.rows.append((time.time(), nv.nvmlDeviceGetClockInfo(self.h, nv.NVML_CLOCK_SM),
                                  nv.nvmlDeviceGetPowerUsage(self.h) / 1000,
                                  nv.nvmlDeviceGetTemperature(self.h, nv.NVML_TEMPERATURE_GPU),
                                  reasons(self.h)))
            except Exception:
                pass
            time.sleep(self.period)

    def summary(self, t0, t1) -> dict:
        # skip the first 40% of the window: the limiter's settling
        lo = t0 + 0.4 * (t1 - t0)
        rows = [r for r in self.rows if lo <= r[0] <= t1]
        if not rows:
            return {}
        n = len(rows)
        bits = 0
        for r in rows:
            bits |= r[4]
        return {"mhz": round(sum(r[1] for r in rows) / n), "watt": round(sum(r[2] for r in rows) / n),
                "temp": max(r[3] for r in rows), "reasons": hex(bits), "samples": n}


REASONS = {0x1: "idle", 0x2: "app_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
           0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake"}


def reason_text(h: str) -> str:
    v = int(h, 16)
    return "+".join(n for b, n in REASONS.items() if v & b) or "none"


def torch_baselines(sampler, sets) -> list[dict]:
    import torch

    rows = []
    shapes = []
    if "big" in sets:
        shapes += [(8192, 8192, 8192, 3.0)]
    if "small" in sets:
        shapes += SMALL
    if "pointwise" in sets:
        shapes += POINTWISE
    g = torch.Generator(device="cuda")
    g.manual_seed(1)
    for m, n, k, sustain in shapes:
        for label, dt in (("f16", torch.float16), ("bf16", torch.bfloat16)):
            if label == "bf16" and m < 8192:
                continue
            a = (torch.rand((m, k), generator=g, device="cuda") * 2 - 1).to(dt)
            b = (torch.rand((k, n), generator=g, device="cuda") * 2 - 1).to(dt)
            bias = (torch.rand((n,), generator=g, device="cuda") * 2 - 1).to(dt)
            fns = {f"torch.matmul {label}": lambda: a @ b}
            if label == "f16":
                fns["relu(addmm) f16"] = lambda: torch.relu(torch.addmm(bias, a, b))
            for name, fn in fns.items():
                rows.append(torch_protocol(sampler, f"{name} {m}x{n}x{k}", fn, 2.0 * m * n * k, sustain))
    return rows


def torch_protocol(sampler, name, fn, flop, sustain) -> dict:
    import torch
    from gpu_timing import warm_up

    warm_up(fn)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    fn()
    b.record()
    b.synchronize()
    t1 = a.elapsed_time(b)
    n = max(1, min(400, int(5.0 / max(t1, 1e-3))))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(n):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    time.sleep(0.5)
    burst = []
    for _ in range(3):
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        burst.append(round(flop * n / (a.elapsed_time(b) * 1e-3) / 1e12, 1))
    reps = min(4000, max(3, int(sustain * 1000 / (t1 * n))))
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
    ev[0].record()
    for r in range(reps):
        graph.replay()
        ev[r + 1].record()
    ev[-1].synchronize()
    w1 = time.time()
    cum = [0.0] + [ev[0].elapsed_time(e) for e in ev[1:]]
    total = cum[-1]
    tail = min(1000.0, total / 2)
    r0 = reps
    while r0 > 0 and total - cum[r0 - 1] <= tail:
        r0 -= 1
    rate_tail = flop * n * (reps - r0) / ((total - cum[r0]) * 1e-3) / 1e12
    row = {"item": name, "n": n, "burst": burst, "rate_tail": round(rate_tail, 1),
           "t_start": w1 - total / 1000, "t_end": w1}
    row.update(sampler.summary(row["t_start"], row["t_end"]))
    del graph
    return row


def profile_cublas_small() -> list[str]:
    import torch

    out = []
    for m, n, k, _ in SMALL:
        a = torch.rand((m, k), device="cuda").half()
        b = torch.rand((k, n), device="cuda").half()
        bt = torch.rand((n, k), device="cuda").half()
        bias = torch.rand((n,), device="cuda").half()
        for label, fn in (("addmm NN", lambda: torch.addmm(bias, a, b)),
                          ("addmm TN", lambda: torch.addmm(bias, a, bt.t()))):
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(5):
                    fn()
                torch.cuda.synchronize()
            for ev in prof.key_averages():
                us = (getattr(ev, "device_time_total", 0) or 0) / 5
                if us > 0:
                    out.append(f"{m}x{n}x{k} {label}: {ev.key[:150]} {us:.1f} us")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "probe_out"))
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--set", default="big,small")
    ap.add_argument("--no-ncu", action="store_true")
    args = ap.parse_args(argv)
    sets = set(args.set.split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from sched_sweep import prepare_work

    from byocc.backends.toolchain import NVCC_ARCH_FLAGS
    from byocc.backends.toolchain import NVCC_COMMON_FLAGS

    work, incs, runtime_o = prepare_work("probe")
    vs = variants(sets)
    progs = [(v, make_program(v, work)) for v in vs]
    t_build = time.perf_counter()

    def build(item):
        v, path = item
        exe = path.with_suffix("")
        t0 = time.perf_counter()
        p = subprocess.run(["nvcc", *NVCC_COMMON_FLAGS, *NVCC_ARCH_FLAGS["sm90"], *incs, str(path),
                            str(runtime_o), "-o", str(exe)], capture_output=True, text=True)
        return v, exe, p.returncode, p.stderr[-3000:], time.perf_counter() - t0

    with cf.ThreadPoolExecutor(args.jobs) as pool:
        built = list(pool.map(build, progs))
    print(f"built {len(built)} programs in {time.perf_counter() - t_build:.0f}s", flush=True)
    sampler = Sampler()
    sampler.start()
    results = {"gpu": sampler.info, "programs": {}, "torch": [], "cublas_kernels": [], "ncu": ""}
    with open(out / "build.log", "w") as log:
        for v, _exe, rc, err, dt in built:
            log.write(f"== {v.name} rc={rc} {dt:.0f}s\n{err}\n")
    for v, exe, rc, err, _dt in built:
        if rc != 0:
            results["programs"][v.name] = [{"error": "build failed: " + err[-600:]}]
            print(f"{v.name}: build failed: {err[-300:]}", flush=True)
            continue
        spec = ";".join(f"{m},{n},{k},{sw},{ra},{de},{sp},{sus}" for (m, n, k, sus) in v.shapes
                        for (sw, ra, de, sp) in v.knobs)
        p = subprocess.run([str(exe), "time", spec], capture_output=True, text=True, timeout=240)
        rows = []
        for line in p.stdout.splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                row = {"raw": line}
            if "t_start" in row:
                row.update(sampler.summary(row["t_start"], row["t_end"]))
            rows.append(row)
        if p.returncode:
            rows.append({"error": f"rc {p.returncode}: {p.stderr[-400:]}"})
        results["programs"][v.name] = rows
        print(v.name, flush=True)
        for r in rows:
            print("   ", summary_line(r), flush=True)
    try:
        results["torch"] = torch_baselines(sampler, sets)
        for r in results["torch"]:
            print("   ", summary_line(r), flush=True)
        if "small" in sets:
            results["cublas_kernels"] = profile_cublas_small()
    except Exception as e:
        results["torch_error"] = repr(e)
        print("torch baselines failed:", e)
    if not args.no_ncu and "big" in sets:
        b0 = next((exe for v, exe, rc, _, _ in built if v.name.startswith("B0") and rc == 0), None)
        if b0 is not None:
            cmd = ["ncu", "--clock-control", "none", "--section", "SpeedOfLight",
                   "--section", "ComputeWorkloadAnalysis", "--section", "LaunchStats", "--section", "Occupancy",
                   "-k", "regex:device_kernel", "--launch-skip", "3", "--launch-count", "1",
                   str(b0), "once", "8192,8192,8192,0,-1,-1,0,0"]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                results["ncu"] = p.stdout[-12000:] + p.stderr[-2000:]
            except Exception as e:
                results["ncu"] = f"ncu failed: {e}"
    sampler.stop_flag = True
    (out / "probe.json").write_text(json.dumps(results, indent=1, default=str))
    (out / "samples.json").write_text(json.dumps(sampler.rows))
    print("\n== ncu (B0, 8192^3, one launch) ==")
    for line in results["ncu"].splitlines():
        if any(w in line for w in ("Frequency", "Throughput", "Duration", "Elapsed Cycles", "Registers",
                                   "Shared Memory", "Executed Ipc", "SM Busy", "Issue Slots", "Theoretical Occ",
                                   "Achieved Occ", "Grid Size", "Block Size", "Cluster", "Waves", "error", "ERR")):
            print(line.rstrip())
    print("\n== cuBLAS kernels (small shapes) ==")
    for line in results["cublas_kernels"]:
        print(line)
    print("\n== gpu ==", json.dumps(sampler.info))
    print("== summary: item | burst TFLOP/s | sustained (last s) | MHz W C reasons ==")
    for name, rows in results["programs"].items():
        for r in rows:
            print(f"{name[:26]:26s} {summary_line(r)}")
    for r in results["torch"]:
        print(f"{'torch':26s} {summary_line(r)}")
    return 0


def summary_line(r: dict) -> str:
    if "error" in r or "raw" in r:
        return f"{r.get('item', '')} {r.get('error', r.get('raw', ''))}"
    burst = "/".join(f"{x:.0f}" for x in r.get("burst", []))
    sus = f"{r.get('rate_tail', 0):.0f}"
    hw = ""
    if "mhz" in r:
        hw = f"{r['mhz']} MHz {r['watt']} W {r['temp']} C {reason_text(r['reasons'])}"
    series = ",".join(f"{x:.0f}" for x in r.get("series", [])[:14])
    return f"{r.get('item')} | {burst} | {sus} | {hw} | {series}"


if __name__ == "__main__":
    sys.exit(main())
