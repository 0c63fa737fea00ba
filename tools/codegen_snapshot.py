"""md5 of every generated ``src/`` tree, to prove a refactoring of the code-generation layer
leaves the generated C++ byte-identical (issue 18).

Runs ``byocc partition ... -o DIR`` in-process for

* every partition run of the conformance corpus that offloads (``--backend`` or
  ``--patterns``), with the run's own arguments,
* the samples (``.relax`` and ``.onnx``, each backend, both paths),
* the modules of ``bench/gpu/gemm_matrix.py`` (one per backend),

and records, per run, the exit code and the md5 of every file under ``DIR/src`` (and one md5
over the whole tree). ``--write FILE`` stores the result; ``--check FILE`` compares with a
stored one and prints every run whose sources changed. Ends with ``N passed, M failed``.

    python tools/codegen_snapshot.py --write /tmp/before.json
    python tools/codegen_snapshot.py --check /tmp/before.json
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared"


def corpus_runs() -> list[tuple[str, Path, list[str]]]:
    runs = []
    for case_json in sorted((SHARED / "conformance" / "cases").glob("*/case.json")):
        case = case_json.parent
        spec = json.loads(case_json.read_text())
        for r in spec.get("runs", []):
            args = list(r.get("args") or [])
            if not args or not any(a in ("--backend", "--patterns") for a in args):
                continue
            args = [str(case / a) if a.endswith(".py") and (case / a).exists() else a for a in args]
            runs.append((f"{case.name}/{r['name']}", case / "input.relax", args))
    return runs


def sample_runs() -> list[tuple[str, Path, list[str]]]:
    runs = []
    for model in sorted((ROOT / "samples").glob("*.relax")) + sorted((ROOT / "samples").glob("*.onnx")):
        extra = ["--layout", "NHWC", "--fold-batch-norm"] if model.suffix == ".onnx" else []
        for backend in ("cutlass", "cublas"):
            for path in ("annotate", "merge"):
                runs.append((f"samples/{model.name}/{backend}/{path}", model,
                             ["--backend", backend, "--path", path, *extra]))
    return runs


def gemm_matrix_runs(work: Path) -> list[tuple[str, Path, list[str]]]:
    sys.path.insert(0, str(ROOT / "bench" / "gpu"))
    import gemm_matrix as gm  # type: ignore[import-not-found]

    runs = []
    for b in ("cutlass", "cublas"):
        cases = gm.composite_cases(b, False) + gm.spec15_cases(b) + [c for c in gm.perf_cases() if c.backend == b]
        model = work / f"gemm_{b}.relax"
        model.write_text(gm.module_text(cases))
        runs.append((f"gemm_matrix/{b}", model, ["--backend", b]))
    return runs


#: ``(new, old)`` texts put back before hashing (``--undo NEW=OLD``): proves that a change of
#: the generated sources is exactly that replacement.
UNDO: list[tuple[bytes, bytes]] = []


def tree_md5(folder: Path) -> dict[str, str]:
    if not folder.is_dir():
        return {}
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            for new, old in UNDO:
                data = data.replace(new, old)
            out[str(p.relative_to(folder))] = hashlib.md5(data).hexdigest()
    return out


def run_one(label: str, model: Path, args: list[str], work: Path) -> dict:
    from click.testing import CliRunner

    from byocc.cli.main import cli

    out = work / "o"
    shutil.rmtree(out, ignore_errors=True)
    with contextlib.redirect_stderr(io.StringIO()):
        res = CliRunner().invoke(cli, ["partition", str(model), *args, "-o", str(out)], catch_exceptions=True)
    files = tree_md5(out / "src")
    whole = hashlib.md5(json.dumps(files, sort_keys=True).encode()).hexdigest()
    errors = [line for line in (res.output or "").splitlines() if "error" in line] if res.exit_code else []
    return {"exit": res.exit_code, "md5": whole, "files": files, "error": errors[0] if errors else ""}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", type=Path)
    g.add_argument("--check", type=Path)
    ap.add_argument("-k", default=None, help="only runs whose label contains this")
    ap.add_argument("--undo", action="append", default=[], metavar="NEW=OLD",
                    help="replace NEW by OLD in every generated file before hashing (repeatable)")
    args = ap.parse_args(argv)
    UNDO[:] = [tuple(x.encode() for x in item.split("=", 1)) for item in args.undo]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        runs = corpus_runs() + sample_runs() + gemm_matrix_runs(work)
        if args.k:
            runs = [r for r in runs if args.k in r[0]]
        result = {label: run_one(label, model, a, work) for label, model, a in runs}
    if args.write:
        args.write.write_text(json.dumps(result, indent=1, sort_keys=True))
        ok = sum(1 for r in result.values() if r["exit"] == 0)
        print(f"{len(result)} runs, {ok} wrote sources, {len(result) - ok} refused")
        print(f"{len(result)} passed, 0 failed")
        return 0
    before = json.loads(args.check.read_text())
    failed = 0
    for label, now in result.items():
        was = before.get(label)
        if was is None:
            continue
        if was["exit"] != now["exit"] or was["md5"] != now["md5"]:
            failed += 1
            changed = sorted(k for k in set(was["files"]) | set(now["files"])
                             if was["files"].get(k) != now["files"].get(k))
            print(f"CHANGED {label}: exit {was['exit']}->{now['exit']} {now['error']} files: {changed[:6]}")
    print(f"{len(result) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
