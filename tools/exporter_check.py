#!/usr/bin/env python3
"""Export small torchvision / transformers models with both torch.onnx exporters and
check each through byocc's CLI: import, run (vs onnxruntime), partition, verify.

    python tools/exporter_check.py [--out DIR] [--max-seconds 170] [--only NAME ...]

Tool dependencies only (not byocc's): torch, torchvision, transformers, onnx,
onnxruntime (and onnxscript for the dynamo exporter). Models get random weights and
small configurations so byocc's numpy interpreter stays fast.

For every model x exporter (TorchScript at opset 17, dynamo at its default opset) it runs,
each in a subprocess with a per-step timeout (`python -m byocc ...`):
  1. byocc import m.onnx -o m.relax
  2. byocc run m.relax --inputs inputs.npz -o out.npz   (compared with onnxruntime)
  3. byocc partition m.relax --backend cutlass --backend cublas -o part/
  4. byocc verify m.relax --backend cutlass --backend cublas
and writes a markdown table (exporter_table.md) and exporter_results.json to --out
(default $OUT, else ./exporter_check_out). One failing step never stops the table.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import io
import json
import os
import subprocess
import sys
import threading
import time
import traceback
import warnings
from pathlib import Path

COLUMNS = ["model", "exporter", "opset", "import", "run vs ORT (max abs / rel err)",
           "partition (#functions)", "verify", "seconds", "first error"]
EXPORTERS = ("torchscript", "dynamo")


# --------------------------------------------------------------------------- helpers
def first_error_line(text: str, limit: int = 240) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    pick = ""
    for ln in lines:
        if "error" in ln.lower() or "Error" in ln:
            pick = ln
            break
    if not pick and lines:
        pick = lines[-1]
    pick = pick.replace("|", "\\|").replace("`", "'")
    return pick[:limit] + ("..." if len(pick) > limit else "")


def run_byocc(args, timeout: float, cwd=None) -> dict:
    """Run `python -m byocc ARGS`; never raises."""
    cmd = [sys.executable, "-m", "byocc", *map(str, args)]
    t0 = time.time()
    if timeout <= 1:
        return {"rc": None, "out": "", "err": "skipped: time budget spent", "s": 0.0}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                           errors="replace")
        return {"rc": p.returncode, "out": p.stdout, "err": p.stderr, "s": time.time() - t0}
    except subprocess.TimeoutExpired:
        return {"rc": None, "out": "", "err": f"timeout after {timeout:.0f} s",
                "s": time.time() - t0}
    except Exception as e:  # noqa: BLE001
        return {"rc": None, "out": "", "err": f"{type(e).__name__}: {e}", "s": time.time() - t0}


def md_table(rows) -> str:
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        out.append("| " + " | ".join(str(r.get(c, "")) for c in COLUMNS) + " |")
    return "\n".join(out) + "\n"


def write_outputs(outdir: Path, rows, meta) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    text = md_table(rows)
    (outdir / "exporter_table.md").write_text(text)
    (outdir / "exporter_results.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                             indent=1, default=str))


def compare(ours: dict, refs: list) -> tuple[bool, str]:
    import numpy as np
    if len(ours) != len(refs):
        return False, f"{len(ours)} outputs vs ORT {len(refs)}"
    worst_abs, worst_rel = 0.0, 0.0
    for i, ref in enumerate(refs):
        got = ours.get(f"output_{i}")
        if got is None:
            return False, f"output_{i} missing"
        ref = np.asarray(ref)
        if got.shape != ref.shape:
            return False, f"output_{i} shape {got.shape} vs ORT {ref.shape}"
        if ref.size == 0:
            continue
        g, r = got.astype(np.float64), ref.astype(np.float64)
        a = float(np.max(np.abs(g - r)))
        if not np.isfinite(a):
            return False, f"output_{i} non-finite"
        scale = float(np.max(np.abs(r))) or 1.0
        worst_abs, worst_rel = max(worst_abs, a), max(worst_rel, a / scale)
    ok = worst_rel <= 1e-3
    return ok, f"{'ok' if ok else 'MISMATCH'} {worst_abs:.1e} / {worst_rel:.1e}"


# --------------------------------------------------------------------------- byocc steps
def byocc_steps(row: dict, work: Path, ort_outs, deadline: float, step_timeout: float,
                trials: int) -> None:
    """Steps 1-4 on work/m.onnx; fills row in place; never raises."""
    import numpy as np
    errors = []

    def budget():
        return max(0.0, min(step_timeout, deadline - time.time()))

    try:
        r = run_byocc(["import", work / "m.onnx", "-o", work / "m.relax"], budget())
        if r["rc"] != 0:
            row["import"] = "FAIL" if r["rc"] is not None else "timeout/skip"
            errors.append("import: " + first_error_line(r["err"] or r["out"]))
            row["run vs ORT (max abs / rel err)"] = row["partition (#functions)"] = \
                row["verify"] = "-"
            return
        row["import"] = "ok"

        # 2. run vs ORT
        run_ok = False
        r = run_byocc(["run", work / "m.relax", "--inputs", work / "inputs.npz",
                       "-o", work / "out.npz"], budget())
        if r["rc"] != 0:
            row["run vs ORT (max abs / rel err)"] = "FAIL" if r["rc"] is not None else "timeout/skip"
            errors.append("run: " + first_error_line(r["err"] or r["out"]))
        elif ort_outs is None:
            row["run vs ORT (max abs / rel err)"] = "ran (no ORT reference)"
            run_ok = True
        else:
            try:
                with np.load(work / "out.npz") as z:
                    ours = {k: z[k] for k in z.files}
                run_ok, txt = compare(ours, ort_outs)
                row["run vs ORT (max abs / rel err)"] = txt
                if not run_ok:
                    errors.append("run: " + txt)
            except Exception as e:  # noqa: BLE001
                row["run vs ORT (max abs / rel err)"] = "FAIL (compare)"
                errors.append(f"compare: {type(e).__name__}: {e}")

        # 3. partition
        r = run_byocc(["partition", work / "m.relax", "--backend", "cutlass", "--backend",
                       "cublas", "-o", work / "part"], budget())
        if r["rc"] == 0:
            try:
                man = json.loads((work / "part" / "manifest.json").read_text())
                row["partition (#functions)"] = f"ok ({len(man.get('functions', []))})"
            except Exception as e:  # noqa: BLE001
                row["partition (#functions)"] = "ok (no manifest)"
                errors.append(f"manifest: {type(e).__name__}: {e}")
        else:
            row["partition (#functions)"] = "FAIL" if r["rc"] is not None else "timeout/skip"
            errors.append("partition: " + first_error_line(r["err"] or r["out"]))

        # 4. verify (skipped when run failed: the original module cannot run)
        if not run_ok:
            row["verify"] = "skipped (run failed)"
        else:
            r = run_byocc(["verify", work / "m.relax", "--backend", "cutlass", "--backend",
                           "cublas", "--trials", trials], budget())
            if r["rc"] == 0:
                row["verify"] = "ok"
            else:
                row["verify"] = "FAIL" if r["rc"] is not None else "timeout/skip"
                errors.append("verify: " + first_error_line(r["err"] or r["out"]))
    except Exception as e:  # noqa: BLE001
        errors.append(f"harness: {type(e).__name__}: {e}")
    finally:
        row["first error"] = errors[0] if errors else ""
        row["_errors"] = errors


# --------------------------------------------------------------------------- models
def model_specs(torch, only):
    """(name, build) in smallest-first order; build() -> (module, tuple of example inputs)."""
    nn = torch.nn
    g = torch.Generator().manual_seed(0)
    seq, vocab = 8, 100

    def ids(*shape):
        return torch.randint(0, vocab, shape, generator=g, dtype=torch.int64)

    class Out0(nn.Module):
        """Return one tensor (logits / last_hidden_state) so outputs line up; the
        positional inputs are passed as the keyword arguments `names`."""
        def __init__(self, m, field, names=("input_ids",)):
            super().__init__()
            self.m, self.field, self.names = m, field, tuple(names)

        def forward(self, *args):
            out = self.m(**dict(zip(self.names, args)))
            return getattr(out, self.field) if hasattr(out, self.field) else out[0]

    def _with_mask(model, x):
        # transformers' causal-mask code calls torch.diff (packed-sequence detection) when
        # no attention_mask is given, which the TorchScript exporter cannot export; an
        # all-ones mask, as a tokenizer would give, avoids it.
        return model, (x, torch.ones_like(x))

    def vit():
        from torchvision.models.vision_transformer import VisionTransformer
        m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                              hidden_dim=32, mlp_dim=64, num_classes=10)
        return m, (torch.randn(1, 3, 32, 32, generator=g),)

    def bert():
        import transformers as T
        c = T.BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, intermediate_size=64,
                         max_position_embeddings=64)
        return Out0(T.BertModel(c), "last_hidden_state"), (ids(1, seq),)

    def distilbert():
        import transformers as T
        c = T.DistilBertConfig(vocab_size=vocab, dim=32, n_layers=2, n_heads=2,
                               hidden_dim=64, max_position_embeddings=64)
        return Out0(T.DistilBertModel(c), "last_hidden_state"), (ids(1, seq),)

    def gpt2():
        import transformers as T
        c = T.GPT2Config(vocab_size=vocab, n_embd=32, n_layer=2, n_head=2, n_positions=64,
                         use_cache=False)
        return _with_mask(Out0(T.GPT2LMHeadModel(c), "logits",
                               ("input_ids", "attention_mask")), ids(1, seq))

    def llama():
        import transformers as T
        c = T.LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          max_position_embeddings=64, use_cache=False)
        return _with_mask(Out0(T.LlamaForCausalLM(c), "logits",
                               ("input_ids", "attention_mask")), ids(1, seq))

    def t5():
        import transformers as T
        c = T.T5Config(vocab_size=vocab, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                       num_decoder_layers=2, num_heads=4, use_cache=False)
        return (Out0(T.T5Model(c), "last_hidden_state", ("input_ids", "decoder_input_ids")),
                (ids(1, seq), ids(1, seq)))

    def mobilenet():
        import torchvision
        return (torchvision.models.mobilenet_v3_small(weights=None),
                (torch.randn(1, 3, 64, 64, generator=g),))

    def resnet18():
        import torchvision
        return (torchvision.models.resnet18(weights=None),
                (torch.randn(1, 3, 32, 32, generator=g),))

    specs = [("vit_tiny", vit), ("bert", bert), ("distilbert", distilbert), ("gpt2", gpt2),
             ("llama", llama), ("t5", t5), ("mobilenet_v3_small", mobilenet),
             ("resnet18", resnet18)]
    if only:
        specs = [s for s in specs if s[0] in only]
    return specs


def export_one(torch, onnx, model, inputs, exporter, path: Path) -> None:
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), \
            contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        names = [f"input_{i}" for i in range(len(inputs))]
        if exporter == "torchscript":
            torch.onnx.export(model, inputs, str(path), dynamo=False, opset_version=17,
                              input_names=names, output_names=["output_0"])
        else:
            prog = torch.onnx.export(model, inputs, dynamo=True)
            prog.save(str(path))
    # keep everything in one file (byocc reads plain .onnx)
    m = onnx.load(str(path))
    onnx.save(m, str(path))


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or "exporter_check_out",
                    help="directory for the table, the JSON and the work files")
    ap.add_argument("--max-seconds", type=float, default=170.0,
                    help="no new export after this many seconds (minus a margin); "
                         "byocc steps are cut off at this bound too")
    ap.add_argument("--step-timeout", type=float, default=40.0,
                    help="timeout of each byocc subprocess")
    ap.add_argument("--jobs", type=int, default=6, help="byocc pipelines run in parallel")
    ap.add_argument("--trials", type=int, default=1, help="byocc verify --trials")
    ap.add_argument("--only", action="append", default=[], help="model name (repeatable)")
    ap.add_argument("--exporter", action="append", choices=EXPORTERS, default=[],
                    help="exporter (repeatable; default both)")
    a = ap.parse_args(argv)

    t_start = time.time()
    deadline = t_start + a.max_seconds
    outdir = Path(a.out)
    outdir.mkdir(parents=True, exist_ok=True)
    exporters = a.exporter or list(EXPORTERS)

    missing = []
    mods = {}
    for name in ("numpy", "torch", "torchvision", "transformers", "onnx", "onnxruntime"):
        try:
            mods[name] = __import__(name)
        except Exception as e:  # noqa: BLE001
            missing.append(f"{name} ({type(e).__name__}: {e})")
    if missing:
        print("exporter_check: missing tool dependencies (not byocc dependencies): "
              + ", ".join(missing) + "\n  install e.g. `pip install torch torchvision "
              "transformers onnx onnxruntime onnxscript`", file=sys.stderr)
        return 2
    np, torch, onnx, ort = mods["numpy"], mods["torch"], mods["onnx"], mods["onnxruntime"]
    torch.manual_seed(0)
    torch.set_num_threads(4)
    try:  # nn.MultiheadAttention's eval fast path (aten::_native_multi_head_attention)
        torch.backends.mha.set_fastpath_enabled(False)  # has no TorchScript-ONNX export
    except Exception:  # noqa: BLE001
        pass
    meta = {"torch": torch.__version__, "torchvision": mods["torchvision"].__version__,
            "transformers": mods["transformers"].__version__, "onnx": onnx.__version__,
            "onnxruntime": ort.__version__, "python": sys.version.split()[0]}
    print("versions: " + ", ".join(f"{k} {v}" for k, v in meta.items()), flush=True)

    rows, lock = [], threading.Lock()
    pool = cf.ThreadPoolExecutor(max_workers=max(1, a.jobs))
    futures = []

    def finish(row, t0):
        row["seconds"] = f"{time.time() - t0:.1f}"
        with lock:
            try:
                write_outputs(outdir, [dict(r) for r in rows], meta)
            except Exception as e:  # noqa: BLE001 (a row changing while copied)
                print(f"(table not rewritten yet: {e})", file=sys.stderr)
        print(f"done {row['model']}/{row['exporter']}: import {row['import']}, "
              f"run {row['run vs ORT (max abs / rel err)']}, partition "
              f"{row['partition (#functions)']}, verify {row['verify']}"
              + (f" -- {row['first error']}" if row["first error"] else ""), flush=True)

    def pipeline(row, work, ort_outs, t0):
        byocc_steps(row, work, ort_outs, deadline, a.step_timeout, a.trials)
        if row.get("_ort_error"):
            row["_errors"].append("onnxruntime: " + row["_ort_error"])
            row["first error"] = row["first error"] or first_error_line(
                "onnxruntime: " + row["_ort_error"])
        finish(row, t0)

    for name, build in model_specs(torch, set(a.only)):
        for exporter in exporters:
            row = {c: "" for c in COLUMNS}
            row.update({"model": name, "exporter": exporter, "opset": "-"})
            with lock:
                rows.append(row)
            if time.time() > deadline - 30:
                row.update({"import": "not run", "first error": "time budget spent",
                            "run vs ORT (max abs / rel err)": "-",
                            "partition (#functions)": "-", "verify": "-", "seconds": "0"})
                continue
            t0 = time.time()
            work = outdir / "work" / f"{name}_{exporter}"
            work.mkdir(parents=True, exist_ok=True)
            try:
                torch.manual_seed(0)
                model, inputs = build()
                model.eval()
                with torch.no_grad():
                    export_one(torch, onnx, model, inputs, exporter, work / "m.onnx")
                m = onnx.load(str(work / "m.onnx"))
                row["opset"] = next((o.version for o in m.opset_import
                                     if o.domain in ("", "ai.onnx")), "?")
                row["_ops"] = sorted({n.op_type for n in m.graph.node})
            except Exception as e:  # noqa: BLE001
                row.update({"import": "-", "run vs ORT (max abs / rel err)": "-",
                            "partition (#functions)": "-", "verify": "-",
                            "first error": "export: " + first_error_line(
                                f"{type(e).__name__}: {e}")})
                row["_traceback"] = traceback.format_exc()[-3000:]
                finish(row, t0)
                continue
            ort_outs = None
            try:
                sess = ort.InferenceSession(str(work / "m.onnx"),
                                            providers=["CPUExecutionProvider"])
                names = [i.name for i in sess.get_inputs()]
                arrays = [x.detach().cpu().numpy() for x in inputs]
                if len(names) != len(arrays):
                    raise RuntimeError(f"graph has {len(names)} inputs, model {len(arrays)}")
                feed = dict(zip(names, arrays))
                np.savez(work / "inputs.npz", **feed)
                ort_outs = sess.run(None, feed)
            except Exception as e:  # noqa: BLE001
                row["_ort_error"] = f"{type(e).__name__}: {e}"[:500]
                if not (work / "inputs.npz").exists():
                    try:
                        np.savez(work / "inputs.npz",
                                 **{f"input_{i}": x.detach().cpu().numpy()
                                    for i, x in enumerate(inputs)})
                    except Exception:  # noqa: BLE001
                        pass
            futures.append(pool.submit(pipeline, row, work, ort_outs, t0))

    for f in futures:
        try:
            f.result()
        except Exception as e:  # noqa: BLE001
            print(f"harness error: {e}", file=sys.stderr)
    pool.shutdown(wait=True)

    meta["total_seconds"] = round(time.time() - t_start, 1)
    write_outputs(outdir, rows, meta)
    print()
    print(f"## byocc on torch.onnx exporter output ({meta['total_seconds']} s; "
          + ", ".join(f"{k} {v}" for k, v in meta.items() if k != "total_seconds") + ")\n")
    print(md_table(rows), flush=True)
    print(f"wrote {outdir / 'exporter_table.md'} and {outdir / 'exporter_results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
