"""The Python half of ``bench/gpu/e2e_models.sh`` (issue 21: ResNet-50, BERT-base and a
Llama-style layer end to end). Subcommands, each writing JSON under the work folder:

* ``prep NAME W``: build the fp32 torch model from the seed (bench/gpu/references.py,
  the constructors of bench/gpu/export_models.py), export it to ``W/NAME.onnx`` (opset 17,
  TorchScript exporter), write fixed random inputs ``W/NAME.inputs.npz`` and onnxruntime's
  (CPU) outputs on them ``W/NAME.ort.npz``; the torch fp32 output against onnxruntime's
  checks the export (``W/NAME.prep.json``).
* ``torch NAME W --go FILE --lock FILE``: PyTorch fp16 on the GPU, same weights: eager,
  channels-last (ResNet), torch.compile (mode default); compiles (the warm-up) at once, then
  waits for FILE (the builds are done) and times every variant under the GPU lock, eager and
  replayed as one CUDA graph, with the methodology of ``byocc bench`` (its loop and
  statistics); peak device memory of eager; fp16 output against onnxruntime's
  (``W/NAME.torch.json``).
* ``compare NAME W``: byocc's output on the GPU (``W/NAME.byocc.npz``) against onnxruntime's
  with the float16 tolerance of ``verify --device cuda`` (rtol = atol = 1e-2, atol scaled by
  the output's largest magnitude), as the model computes in fp16 (``W/NAME.compare.json``).
* ``table W NAME...``: one table of everything, and ``W/e2e_models.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
INPUT_NAMES = {"resnet50": "x", "bert": "input_ids", "llama": "x"}


def _write_json(path: str, obj) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True, default=str)
    os.replace(tmp, path)


def _load_json(path: str):
    """The JSON object in ``path``; None when absent. Text around the object (a library that
    printed to stdout beside ``byocc bench --json``) is skipped."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    try:
        return json.loads(text)
    except ValueError:
        start, end = text.find("{"), text.rfind("}")
        try:
            return json.loads(text[start:end + 1]) if 0 <= start < end else None
        except ValueError:
            return None


def _inputs(name: str, seed: int):
    import numpy as np
    import references

    kind, kwargs, (shape, dtype) = references.model_config(name)
    rng = np.random.default_rng(1000 + seed)
    if dtype == "int64":  # token ids over the whole vocabulary
        return rng.integers(0, 30522, size=shape).astype(np.int64)
    return rng.standard_normal(shape).astype(np.float32)


def _save_npz(path: str, **arrays) -> None:
    """np.savez through a temporary file and a rename: a reader never sees half a file."""
    import numpy as np

    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
    os.replace(tmp, path)


def _load_ort(work: str, name: str):
    """onnxruntime's output of W/NAME.ort.npz, or None while prep has not written it."""
    import numpy as np

    path = os.path.join(work, f"{name}.ort.npz")
    try:
        with np.load(path) as z:
            return z["output_0"]
    except (OSError, KeyError, ValueError):
        return None


def _rel_err(a, b) -> float:
    import numpy as np

    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(1e-30, np.abs(b).max()))


def cmd_prep(name: str, work: str, seed: int) -> int:
    import numpy as np
    import references
    import torch

    rec: dict = {"model": name}
    t0 = time.perf_counter()
    model = references.build_model(name, seed)
    kind = references.model_config(name)[0]
    x = _inputs(name, seed)
    _save_npz(os.path.join(work, f"{name}.inputs.npz"), **{INPUT_NAMES[kind]: x})
    path = os.path.join(work, f"{name}.onnx")
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(model, (torch.from_numpy(x),), tmp, opset_version=17, dynamo=False,
                          input_names=[INPUT_NAMES[kind]], output_names=["output"], do_constant_folding=True)
    os.replace(tmp, path)
    rec["export_s"] = round(time.perf_counter() - t0, 2)
    rec["onnx_mib"] = round(os.path.getsize(path) / 2**20, 1)
    print(f"{name}: exported {path} ({rec['onnx_mib']} MiB) in {rec['export_s']} s", flush=True)
    ref = None
    try:
        import onnxruntime as ort

        t1 = time.perf_counter()
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        out = sess.run(None, {sess.get_inputs()[0].name: x})[0]
        rec["ort_s"] = round(time.perf_counter() - t1, 2)
        _save_npz(os.path.join(work, f"{name}.ort.npz"), output_0=out)
        ref = out
        print(f"{name}: onnxruntime (CPU) {rec['ort_s']} s", flush=True)
        if os.environ.get("E2E_CHECK_EXPORT", "0") != "0":  # torch fp32 on the CPU against onnxruntime
            with torch.no_grad():
                rec["ort_vs_torch_fp32_rel"] = _rel_err(out, model(torch.from_numpy(x)).numpy())
            print(f"{name}: max |ort - torch fp32| / max |torch| = {rec['ort_vs_torch_fp32_rel']:.2e}", flush=True)
    except Exception as exc:  # noqa: BLE001  (onnxruntime missing or refusing the model: reported)
        rec["ort_error"] = f"{type(exc).__name__}: {exc}"[:300]
        with torch.no_grad():
            ref = model(torch.from_numpy(x)).numpy()
        _save_npz(os.path.join(work, f"{name}.ort.npz"), output_0=ref)  # torch fp32 stands in
        rec["ort_stand_in"] = "torch fp32 (CPU)"
        print(f"{name}: onnxruntime failed ({rec['ort_error']}); torch fp32 output stands in", flush=True)
    rec["output_shape"] = list(ref.shape)
    rec["output_max_abs"] = float(np.abs(ref).max())
    _write_json(os.path.join(work, f"{name}.prep.json"), rec)
    return 0


def _time_variant(label, fn, inp, warmup, iters, batch, torch, lock_path):
    """byocc bench's loop and statistics, eager and replayed as one CUDA graph."""
    import fcntl

    from byocc.cli.bench import _loop
    from byocc.cli.bench import _stats
    from byocc.cli.bench import _TorchRec

    cuda = inp.is_cuda
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def cuda_events():
        return _TorchRec(torch.cuda.Event(enable_timing=True)), _TorchRec(torch.cuda.Event(enable_timing=True))

    events = cuda_events if cuda else None

    # the process holds every variant's model: a variant's peak is what its calls allocated
    # beyond what was resident before, plus its own weights and the input (what one model alone holds)
    own = int(getattr(fn, "weight_bytes", 0)) + inp.numel() * inp.element_size()
    base = [0]

    def peak():
        return torch.cuda.max_memory_allocated() - base[0] + own if cuda else None

    res = []
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            sync()
            if cuda:
                torch.cuda.reset_peak_memory_stats()
                base[0] = torch.cuda.memory_allocated()
            wall, dev = _loop(lambda: fn(inp), sync, events, warmup, iters, label)
            res.append(_stats("torch", label, wall, dev, batch, peak_bytes=peak()))
            try:
                if not cuda:
                    raise RuntimeError("no CUDA device (dry run)")
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(2):
                        fn(inp)
                torch.cuda.current_stream().wait_stream(s)
                sync()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    fn(inp)
                wall, dev = _loop(g.replay, sync, events, warmup, iters, label + " graph")
                res.append(_stats("torch", label + " graph", wall, dev, batch, peak_bytes=peak()))
            except Exception as exc:  # noqa: BLE001  (a variant that cannot be captured: reported)
                res.append({"impl": "torch", "mode": label + " graph", "skipped": f"capture failed: {exc}"[:200]})
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return res


def cmd_torch(name: str, work: str, go: str, lock: str, warmup: int, iters: int, max_wait: float) -> int:
    import references
    import torch

    kind = references.model_config(name)[0]
    x = _inputs(name, int(os.environ.get("E2E_SEED", "0")))
    cpu = os.environ.get("E2E_DEVICE", "cuda") == "cpu"
    inp = torch.from_numpy(x) if cpu else torch.from_numpy(x).cuda()
    batch = int(x.shape[0])
    variants = [("eager", {})]
    compile_too = os.environ.get("E2E_COMPILE", "1") != "0"
    if kind == "resnet50":
        variants.append(("channels-last", {"channels_last": True}))
        if compile_too:
            variants.append(("compile channels-last", {"channels_last": True, "compile": True}))
    elif compile_too:
        variants.append(("compile", {"compile": True}))
    ort = _load_ort(work, name)
    rec: dict = {"model": name, "torch": torch.__version__, "device": "cpu" if cpu else torch.cuda.get_device_name(), "results": []}
    fns = []
    with torch.inference_mode():
        for label, kw in variants:
            t0 = time.perf_counter()
            try:
                fn = references._fp16_on_gpu(name, **kw)
                out = None
                for _ in range(2):  # torch.compile compiles here, before the builds are done
                    out = fn(inp)
                if not cpu:
                    torch.cuda.synchronize()
                fns.append((label, fn))
                rec[f"{label} warmup_s"] = round(time.perf_counter() - t0, 1)
                if label == "eager" and out is not None:
                    o = out.float().cpu().numpy()
                    if ort is None:
                        ort = _load_ort(work, name)
                    if ort is not None and ort.shape == o.shape:
                        rec["eager_fp16_vs_ort_rel"] = _rel_err(o, ort)
                print(f"{name}: torch {label} ready in {rec[f'{label} warmup_s']} s", flush=True)
            except Exception as exc:  # noqa: BLE001  (a variant that fails: reported, the others go on)
                rec["results"].append({"impl": "torch", "mode": label, "skipped": f"{type(exc).__name__}: {exc}"[:300]})
                print(f"{name}: torch {label} failed: {exc}", flush=True)
        t0 = time.perf_counter()
        while not os.path.exists(go) and time.perf_counter() - t0 < max_wait:
            time.sleep(1)
        if ort is None:
            ort = _load_ort(work, name)
            try:
                o = fns[0][1](inp).float().cpu().numpy() if fns and fns[0][0] == "eager" else None
                if ort is not None and o is not None and ort.shape == o.shape:
                    rec["eager_fp16_vs_ort_rel"] = _rel_err(o, ort)
            except Exception as exc:  # noqa: BLE001
                rec["eager_vs_ort_error"] = f"{type(exc).__name__}: {exc}"[:200]
        for label, fn in fns:
            try:
                rec["results"].extend(_time_variant(label, fn, inp, warmup, iters, batch, torch, lock))
            except Exception as exc:  # noqa: BLE001
                rec["results"].append({"impl": "torch", "mode": label, "skipped": f"{type(exc).__name__}: {exc}"[:300]})
    for r in rec["results"]:
        if "median_ms" in r:
            print(f"{name}: torch {r['mode']:<28} {r['median_ms']:8.3f} ms  peak "
                  f"{(r.get('peak_bytes') or 0) / 2**20:8.1f} MiB", flush=True)
    _write_json(os.path.join(work, f"{name}.torch.json"), rec)
    return 0


def cmd_compare(name: str, work: str) -> int:
    import numpy as np

    from byocc.runtime.inputs import compare

    rec: dict = {"model": name}
    try:
        got = np.load(os.path.join(work, f"{name}.byocc.npz"))
        exp = np.load(os.path.join(work, f"{name}.ort.npz"))["output_0"]
        act = got[sorted(got.files)[0]]
        tol = {"float32": (1e-2, 1e-2), "float16": (1e-2, 1e-2)}
        r = compare(exp, act.astype(exp.dtype) if act.shape == exp.shape else act, tolerances=tol,
                    scale_atol=True)[0]
        rec.update({k: v for k, v in r.items()})
        rec["rel_to_max"] = _rel_err(act, exp) if act.shape == exp.shape else None
        prep = _load_json(os.path.join(work, f"{name}.prep.json")) or {}
        rec["against"] = prep.get("ort_stand_in", "onnxruntime (CPU, fp32)")
        print(f"{name}: byocc vs {rec['against']}: {'ok' if rec['ok'] else 'MISMATCH'} "
              f"max_abs {rec['max_abs']:.3e} (atol {rec['atol']:.3e}), max |diff| / max |ref| "
              f"{rec['rel_to_max']}", flush=True)
        code = 0 if rec["ok"] else 1
    except Exception as exc:  # noqa: BLE001
        rec["error"] = f"{type(exc).__name__}: {exc}"[:300]
        print(f"{name}: compare failed: {rec['error']}", flush=True)
        code = 1
    _write_json(os.path.join(work, f"{name}.compare.json"), rec)
    return code


def _fmt(v) -> str:
    return f"{v:.1e}" if isinstance(v, (int, float)) else "-"


def _find(results, impl, mode):
    for r in results or []:
        if r.get("impl") == impl and r.get("mode") == mode and "median_ms" in r:
            return r
    return None


def cmd_table(work: str, out: str, names: list[str]) -> int:
    rows, everything = [], {}
    for n in names:
        bench = _load_json(os.path.join(work, f"{n}.bench.json")) or {}
        tj = _load_json(os.path.join(work, f"{n}.torch.json")) or {}
        run = _load_json(os.path.join(work, f"{n}.run.json")) or {}
        cmpj = _load_json(os.path.join(work, f"{n}.compare.json")) or {}
        stages = _load_json(os.path.join(work, f"{n}.stages.json")) or {}
        prep = _load_json(os.path.join(work, f"{n}.prep.json")) or {}
        everything[n] = {"bench": bench, "torch": tj, "run": run, "compare": cmpj, "stages": stages, "prep": prep}
        br = bench.get("results", [])
        tr = tj.get("results", [])
        be, bg = _find(br, "byocc", "eager"), _find(br, "byocc", "cuda graph")
        te = _find(tr, "torch", "eager")
        cl = _find(tr, "torch", "channels-last")
        teg = (_find(tr, "torch", "channels-last graph") or _find(tr, "torch", "eager graph")
               or _find(br, "torch", "cuda graph"))
        tcomp = _find(tr, "torch", "compile channels-last") or _find(tr, "torch", "compile")
        if te is None:  # byocc bench's own torch rows stand in
            te = _find(br, "torch", "eager")
        ref_eager = cl or te
        bench_te = _find(br, "torch", "eager")  # byocc bench's reference (channels-last for ResNet), alone in its process
        torch_peak = (bench_te or ref_eager or {}).get("peak_bytes")
        best = bg or be

        def ms(r):
            return f"{r['median_ms']:.3f}" if r else "-"

        def ratio(a, b):
            return f"{a['median_ms'] / b['median_ms']:.2f}" if a and b else "-"

        def mb(v):
            return f"{v / 2**20:.0f}" if isinstance(v, (int, float)) else "-"

        # allocated at most at once (as torch.cuda.max_memory_allocated), else what the pool held
        peak_b = run.get("peak_allocated_bytes") or run.get("peak_bytes") or (be or {}).get("peak_bytes")
        pool_b = run.get("peak_bytes")
        h2d = run.get("h2d_run")
        if h2d is None and be:
            h2d = be.get("h2d_per_call")
        v = stages.get("verify")
        ver = "-" if v is None else {0: "pass", 1: "FAIL", 124: "timeout", 125: "skipped"}.get(v["rc"], f"rc {v['rc']}")
        failed = [k for k, r in stages.items() if r["rc"] != 0 and not (k == "run" and stages.get("run_eager", {}).get("rc") == 0)]
        ortc = "ok" if cmpj.get("ok") else ("MISMATCH" if "ok" in cmpj else "-")
        rows.append([n, ms(be), ms(bg), ms(te), ms(cl), ms(teg), ms(tcomp), ratio(ref_eager, best), ratio(teg, best),
                     ratio(tcomp, best), mb(peak_b), mb(pool_b), mb(torch_peak), str(h2d if h2d is not None else "-"),
                     ver, ortc, _fmt(cmpj.get("rel_to_max")), _fmt(tj.get("eager_fp16_vs_ort_rel")), ",".join(failed)])
    head = ["model", "byocc eager", "byocc graph", "torch eager", "t. ch-last", "t. graph", "t. compile",
            "eager/byocc", "graph/byocc", "compile/byocc", "peak MB byocc", "pool MB byocc", "peak MB torch", "H2D run B",
            "verify", "vs ORT", "byocc-ORT", "torch-ORT", "failed stages"]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    text = "\n".join(lines)
    print("\n(ms: median per batch; ratios: torch ms / byocc's best (graph, else eager) ms; t. graph: torch "
          "eager (channels-last for ResNet) replayed as one CUDA graph; t. compile: torch.compile default "
          "(channels-last for ResNet); peak MB byocc: the most allocated at once during byocc run (as "
          "torch.cuda.max_memory_allocated counts); pool MB byocc: what the CuPy pool held; peak MB torch: "
          "byocc bench's torch eager; H2D run B: bytes host->device "
          "during the run, after the inputs; vs ORT: byocc's output against onnxruntime (CPU, fp32), float16 "
          "tolerance, byocc-ORT / torch-ORT: max |diff| / max |ORT|)")
    print(text)
    with open(os.path.join(out, "e2e_models_table.txt"), "w") as f:
        f.write(text + "\n")
    _write_json(os.path.join(out, "e2e_models.json"), everything)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prep")
    p.add_argument("name")
    p.add_argument("work")
    p.add_argument("--seed", type=int, default=int(os.environ.get("E2E_SEED", "0")))
    p = sub.add_parser("torch")
    p.add_argument("name")
    p.add_argument("work")
    p.add_argument("--go", required=True)
    p.add_argument("--lock", required=True)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--max-wait", type=float, default=600)
    p = sub.add_parser("compare")
    p.add_argument("name")
    p.add_argument("work")
    p = sub.add_parser("table")
    p.add_argument("work")
    p.add_argument("out")
    p.add_argument("names", nargs="+")
    a = ap.parse_args(argv)
    if a.cmd == "prep":
        return cmd_prep(a.name, a.work, a.seed)
    if a.cmd == "torch":
        return cmd_torch(a.name, a.work, a.go, a.lock, a.warmup, a.iters, a.max_wait)
    if a.cmd == "compare":
        return cmd_compare(a.name, a.work)
    return cmd_table(a.work, a.out, a.names)


if __name__ == "__main__":
    sys.exit(main())
