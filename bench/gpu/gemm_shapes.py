"""GPU check and timing of the GEMM shapes issue 19 names: small M (decode), symbolic M (one
library, run-time M buckets) and unaligned K, against PyTorch.

    python bench/gpu/gemm_shapes.py --out $OUT [--jobs 16] [--sm80]

1. writes one Relax module (f16, bias + ReLU, B transposed ("T") unless the case says "N"):
   static 1x4096x4096 and 16x4096x4096; one function with M symbolic (M x 4096 x 4096) and
   the static shapes of the M list {1, 16, 128, 1024, 4096, 16384} (the best static-shape
   kernel for each M); 2000x3000x1500 (K * 2 bytes not 16-byte aligned) and the aligned
   2000x3000x1504, T and N;
2. partitions it for the cutlass backend and builds it (`byocc build -j N`); with --sm80 also
   an sm_80-only build of the same sources (`--arch sm_80`), every case checked there too;
3. calls every case on fresh random inputs, the output poisoned with NaN first, against a
   float64 reference (gemm_matrix.compare); the symbolic-M function at every M of the list
   and at off-bucket Ms (3, 64, 65, 100, 1000, 2049);
4. times each (CUDA-graph replay, gpu_timing.time_graph) against `relu(addmm(b, x, w))` and
   `torch.compile` (default mode) of `relu(x @ w + b)`, and the symbolic-M function against
   the static function of the same M;
5. prints the tables and writes `results.json` / `table.md` under --out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from gemm_matrix import F16  # noqa: E402
from gemm_matrix import Case  # noqa: E402
from gemm_matrix import compare  # noqa: E402
from gemm_matrix import find_symbols  # noqa: E402
from gemm_matrix import make_inputs  # noqa: E402
from gemm_matrix import module_text  # noqa: E402
from gemm_matrix import reference  # noqa: E402
from gemm_matrix import run  # noqa: E402
from gpu_timing import time_graph  # noqa: E402

M_LIST = (1, 16, 128, 1024, 4096, 16384)
EXTRA_M = (3, 64, 65, 100, 1000, 2049)
N = K = 4096


def cases() -> list[Case]:
    out = []
    def add(name, m, n, k, t=True):
        rhs = (n, k) if t else (k, n)
        out.append(Case(name, "cutlass", F16, (m, k), rhs, t, (n,), "relu", perf=True))
    for m in M_LIST:
        add(f"static_{m}x{N}x{K}", m, N, K)
    add("static_16x4096x4096_N", 16, 4096, 4096, False)
    for t in (True, False):
        tag = "T" if t else "N"
        add(f"unaligned_2000x3000x1500_{tag}", 2000, 3000, 1500, t)
        add(f"aligned_2000x3000x1504_{tag}", 2000, 3000, 1504, t)
    out.append(Case("symbolic_m", "cutlass", F16, ("m", K), (N, K), True, (N,), "relu", perf=True, dims={"m": 16}))
    return out


def flop(c: Case) -> float:
    m = c.dims.get("m", c.lhs[0]) if isinstance(c.lhs[0], str) else c.lhs[0]
    n = c.rhs[0] if c.transposed else c.rhs[1]
    return 2.0 * m * n * c.lhs[1]


def check(lib, c: Case, gen) -> tuple[bool, float, list]:
    import torch
    from gemm_matrix import torch_dtype

    xs = make_inputs(c, gen)
    ref = reference(c, xs)
    o = torch.full(ref.shape, float("nan"), device="cuda", dtype=torch_dtype(c.out_type))
    order = [a["name"] for a in lib.functions[c.symbol]["args"]]
    named = dict(zip(["x", "w", "b"], xs))
    args = [named[n] for n in order]
    lib[c.symbol](*args, out=o)
    torch.cuda.synchronize()
    ok, err = compare(c, o, ref)
    return ok, err, [xs, args, o]


def timings(lib, c: Case, state, compile_baseline: bool) -> dict:
    import torch

    xs, args, o = state
    x, w, b = xs
    wk = w.t() if c.transposed else w
    fl = flop(c)
    row = {"byocc": fl / time_graph(lambda: lib[c.symbol](*args, out=o,
                                                         stream=torch.cuda.current_stream().cuda_stream)) / 1e9}
    row["addmm"] = fl / time_graph(lambda: torch.relu(torch.addmm(b, x, wk))) / 1e9
    if compile_baseline:
        try:
            f = torch.compile(lambda x, w, b: torch.relu(x @ w + b))
            f(x, wk, b)
            torch.cuda.synchronize()
            row["compile"] = fl / time_graph(lambda: f(x, wk, b)) / 1e9
        except Exception as e:  # a baseline failing is reported, not fatal
            row["compile_error"] = str(e)[:200]
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "gpu_out"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--sm80", action="store_true", help="also build and check an sm_80-only library")
    ap.add_argument("--no-compile-baseline", action="store_true")
    ap.add_argument("--build-timeout", type=float, default=420.0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("BYOCC_BENCH_WORK", HERE.parents[1] / ".gpu_work")) / "shapes"
    work.mkdir(parents=True, exist_ok=True)
    log = out / "build.log"
    log.write_text("")
    cs = cases()
    model = work / "gemm_shapes.relax"
    model.write_text(module_text(cs))
    d = work / "out"
    if d.exists():
        shutil.rmtree(d)
    py = [sys.executable, "-m", "byocc"]
    res: dict = {"build": {}, "cases": [], "symbolic": []}
    p, dt = run(py + ["partition", str(model), "--backend", "cutlass", "-o", str(d)], log)
    res["build"]["partition_s"] = round(dt, 1)
    if p.returncode:
        print(p.stderr[-3000:])
        return 1
    find_symbols((d / "gemm_shapes.codegen.relax").read_text(), cs)
    manifest = json.loads((d / "manifest.json").read_text())
    res["manifest_buckets"] = [s.get("m_buckets") for f in manifest.get("functions", [])
                               for s in f.get("steps", []) if s.get("m_buckets")]
    builds = [("sm90+sm80", d, [])]
    if args.sm80:
        d80 = work / "out_sm80"
        if d80.exists():
            shutil.rmtree(d80)
        shutil.copytree(d, d80)
        builds.append(("sm80", d80, ["--arch", "sm_80"]))
    done = []
    for label, bd, extra in builds:
        left = args.build_timeout - (time.perf_counter() - t0)
        try:
            p, dt = run(py + ["build", str(bd), "-j", str(args.jobs), *extra], log, timeout=max(left, 10))
        except Exception as e:
            res["build"][f"{label}_error"] = str(e)
            continue
        res["build"][f"{label}_build_s"] = round(dt, 1)
        if p.returncode:
            res["build"][f"{label}_error"] = p.stderr[-3000:]
            print(f"build {label} failed: {p.stderr[-3000:]}")
            continue
        done.append((label, bd))
    import torch

    from byocc.runtime import native

    gen = torch.Generator(device="cuda")
    gen.manual_seed(int(time.time()))
    static_rate: dict = {}
    for label, bd in done:
        lib = native.load(bd)
        timed = label == "sm90+sm80"
        for c in cs:
            ms = (M_LIST + EXTRA_M) if c.dims else (None,)
            for m in ms:
                if m is not None:
                    c.dims = {"m": m}
                row = {"build": label, "case": c.name, "m": m}
                try:
                    ok, err, state = check(lib, c, gen)
                    row.update(status="ok" if ok else "WRONG", err=err)
                    if ok and timed and (m is None or m in M_LIST):
                        row.update(timings(lib, c, state, not args.no_compile_baseline and m is None))
                except Exception as e:
                    row.update(status="ERROR", error=f"{type(e).__name__}: {e}")
                    traceback.print_exc()
                res["cases"].append(row)
                if timed and c.name.startswith("static_") and c.transposed and "byocc" in row:
                    static_rate[c.lhs[0]] = row["byocc"]
    (out / "results.json").write_text(json.dumps(res, indent=1, default=str))
    write_table(res, static_rate, out)
    return 0


def write_table(res: dict, static_rate: dict, out: Path) -> None:
    rows = res["cases"]
    lines = [f"correctness: {sum(r.get('status') == 'ok' for r in rows)} ok of {len(rows)} "
             f"(builds: {', '.join(sorted({r['build'] for r in rows}))})"]
    lines += [f"  {r['status']}: {r['build']} {r['case']} m={r['m']} {r.get('err', '')} {r.get('error', '')}"
              for r in rows if r.get("status") != "ok"]
    lines += ["", "| case | M | byocc TFLOP/s | relu(addmm) | compile | x addmm | x best | x static byocc |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "byocc" not in r:
            continue
        best = max(r.get("addmm", 0), r.get("compile", 0))
        m = r["m"] if r["m"] is not None else ""
        vs_static = f"{r['byocc'] / static_rate[r['m']]:.2f}" if r["m"] in static_rate else ""
        lines.append(f"| {r['case']} | {m} | {r['byocc']:.1f} | {r['addmm']:.1f} | {r.get('compile', float('nan')):.1f} | "
                     f"{r['byocc'] / r['addmm']:.2f} | {r['byocc'] / best:.2f} | {vs_static} |")
    rate = {r["case"]: r["byocc"] for r in rows if "byocc" in r and r["m"] is None}
    for t in ("T", "N"):
        u, a = rate.get(f"unaligned_2000x3000x1500_{t}"), rate.get(f"aligned_2000x3000x1504_{t}")
        if u and a:
            lines.append(f"\nunaligned/aligned {t}: {u:.1f} / {a:.1f} = {u / a:.2f}")
    lines += ["", "manifest M buckets: " + json.dumps(res.get("manifest_buckets")), "build: " + json.dumps(res["build"])]
    text = "\n".join(lines) + "\n"
    (out / "table.md").write_text(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
