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
import subprocess
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
    add("static_64x4096x4096", 64, 4096, 4096)  # the C8 side of the decode rule
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


GROUPS = {
    # the split-K tiers (decode shapes, the symbolic-M function) run in a process of their
    # own, so that a failure there cannot take the other cases' CUDA context with it
    "split": lambda c: c.name.startswith(("static_1x", "static_16x", "static_64x")) or bool(c.dims),
    "rest": lambda c: not (c.name.startswith(("static_1x", "static_16x", "static_64x")) or c.dims),
    # torch.compile of the target shapes, last (its compile time is the slowest part)
    "compile": lambda c: c.name in COMPILED,
    "all": lambda c: True,
}
COMPILED = ("static_16x4096x4096", "static_1x4096x4096", "unaligned_2000x3000x1500_T",
            "aligned_2000x3000x1504_T")


def run_group(lib_dir: Path, group: str, timed: bool, compile_baseline: bool, out_json: Path) -> None:
    """Check (and time) the cases of ``group`` from the library in ``lib_dir``; rows to ``out_json``
    after every case."""
    import torch

    from byocc.runtime import native

    cs = [c for c in cases() if GROUPS[group](c)]
    lib = native.load(lib_dir)
    codegen_text = next(lib_dir.glob("*.codegen.relax")).read_text()
    find_symbols(codegen_text, cs)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(int(time.time() * 1000) % (2 ** 31))
    rows = []
    if group == "compile":
        for c in cs:
            row = {"case": c.name, "m": None, "static_m": c.lhs[0], "compile_only": True}
            try:
                ok, _, state = check(lib, c, gen)
                row.update(timings(lib, c, state, True) if ok else {"status": "WRONG"})
            except Exception as e:
                row.update(status="ERROR", error=f"{type(e).__name__}: {e}")
            rows.append(row)
            out_json.write_text(json.dumps(rows, indent=1, default=str))
        return
    for c in cs:
        for m in ((M_LIST + EXTRA_M) if c.dims else (None,)):
            if m is not None:
                c.dims = {"m": m}
            row = {"case": c.name, "m": m, "static_m": None if c.dims else c.lhs[0]}
            try:
                ok, err, state = check(lib, c, gen)
                row.update(status="ok" if ok else "WRONG", err=err)
                if ok and (timed or c.name in COMPILED) and (m is None or m in M_LIST):
                    row.update(timings(lib, c, state, False))
            except Exception as e:
                row.update(status="ERROR", error=f"{type(e).__name__}: {e}")
                traceback.print_exc()
            rows.append(row)
            out_json.write_text(json.dumps(rows, indent=1, default=str))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "gpu_out"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--sm80", action="store_true", help="also build and check an sm_80-only library")
    ap.add_argument("--no-compile-baseline", action="store_true")
    ap.add_argument("--budget", type=float, default=210.0, help="seconds for everything (groups left out after)")
    ap.add_argument("--group", help=argparse.SUPPRESS)  # internal: run one group (lib dir in --lib)
    ap.add_argument("--lib", help=argparse.SUPPRESS)
    ap.add_argument("--untimed", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.group:
        run_group(Path(args.lib), args.group, not args.untimed, not args.no_compile_baseline,
                  out / f"rows_{args.group}{'_sm80' if args.untimed else ''}.json")
        return 0
    t0 = time.perf_counter()
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
    res: dict = {"build": {}}
    p, dt = run(py + ["partition", str(model), "--backend", "cutlass", "-o", str(d)], log)
    res["build"]["partition_s"] = round(dt, 1)
    if p.returncode:
        print(p.stderr[-3000:])
        return 1
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
    for label, bd, extra in builds:
        left = args.budget - 40 - (time.perf_counter() - t0)
        try:
            p, dt = run(py + ["build", str(bd), "-j", str(args.jobs), *extra], log, timeout=max(left, 10))
        except Exception as e:
            res["build"][f"{label}_error"] = str(e)
            continue
        res["build"][f"{label}_build_s"] = round(dt, 1)
        res["build"][f"{label}_units"] = len(list((bd / "src").rglob("*.cu")))
        if p.returncode:
            res["build"][f"{label}_error"] = p.stderr[-3000:]
            print(f"build {label} failed: {p.stderr[-3000:]}")
            continue
        print(f"built {label} in {dt:.0f} s", flush=True)
        groups = ["split", "rest"] + ([] if args.no_compile_baseline else ["compile"])
        for group in (groups if label == "sm90+sm80" else ["all"]):
            left = args.budget - (time.perf_counter() - t0)
            if left < 8:
                res["build"][f"{label}_{group}"] = "skipped (out of time)"
                continue
            cmd = [sys.executable, __file__, "--out", str(out), "--group", group, "--lib", str(bd)]
            if label != "sm90+sm80":
                cmd.append("--untimed")
            if args.no_compile_baseline:
                cmd.append("--no-compile-baseline")
            try:
                g = subprocess.run(cmd, capture_output=True, text=True, timeout=left)
                res["build"][f"{label}_{group}_rc"] = g.returncode
                if g.returncode:
                    res["build"][f"{label}_{group}_stderr"] = g.stderr[-2000:]
            except subprocess.TimeoutExpired:
                res["build"][f"{label}_{group}"] = "timeout"
            (out / "results.json").write_text(json.dumps(res, indent=1, default=str))
    rows = []
    compiled = {}
    for f in sorted(out.glob("rows_*.json")):
        build = "sm80" if f.stem.endswith("_sm80") else "sm90+sm80"
        for r in json.loads(f.read_text()):
            if r.get("compile_only"):
                compiled[r["case"]] = r.get("compile", r.get("compile_error", r.get("error")))
            else:
                rows.append(dict(r, build=build))
    for r in rows:
        if r["build"] == "sm90+sm80" and r["m"] is None and isinstance(compiled.get(r["case"]), float):
            r["compile"] = compiled[r["case"]]
    res["cases"] = rows
    (out / "results.json").write_text(json.dumps(res, indent=1, default=str))
    static_rate = {r["static_m"]: r["byocc"] for r in rows
                   if r["build"] == "sm90+sm80" and r["case"].startswith("static_") and not r["case"].endswith("_N")
                   and "byocc" in r}
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
        m = r["m"] if r["m"] is not None else r.get("static_m", "")
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
