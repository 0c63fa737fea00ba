"""Which composites ``partition -o`` refuses, per function, over the runs of
``tools/codegen_snapshot.py`` (the conformance corpus, the samples, the GEMM matrix modules).

Each run is partitioned as ``byocc partition ... -o`` does it, except that RunCodegen calls the
``cutlass`` and ``cublas`` codegens one function at a time (so one refused function does not
hide the others) and gives a backend without a codegen (a pattern file's ``acc``, ``npu``...)
an empty stand-in. Every refusal is printed, grouped by its message with the function and
composite names taken out, most frequent first.

``--prefix cutlass`` (or ``cublas``) renames every pattern of a run's pattern file to that
backend (``npu.e0_add`` -> ``cutlass.e0_add``) and keeps only the runs with a pattern file:
every composite a user's pattern file can produce, offered to one backend.

    python tools/codegen_refusals.py
    python tools/codegen_refusals.py --prefix cublas --json /tmp/cublas.json
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import importlib
import io
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", choices=("cutlass", "cublas"), default=None,
                    help="offer every pattern-file composite to this backend")
    ap.add_argument("-k", default=None, help="only runs whose label contains this")
    ap.add_argument("--json", type=Path, default=None, help="write every run's refusals here")
    args = ap.parse_args(argv)

    import codegen_snapshot as snapshot  # type: ignore[import-not-found]
    from click.testing import CliRunner

    import byocc.backends as backends
    from byocc.backends.record import get_codegen
    from byocc.cli.main import cli

    rc = importlib.import_module("byocc.transform.run_codegen")
    refused: list = []

    def lookup(backend):
        if backend not in ("cutlass", "cublas"):
            return rc.stub_codegen(backend, per_function=True)
        real = get_codegen(backend)

        def one_at_a_time(functions, options, constant_names):
            out = []
            for f in functions:
                try:
                    out += real([f], options, constant_names) or []
                except Exception as exc:  # noqa: BLE001 - every refusal is what we count
                    refused.append((backend, str(f[0]), str(exc)))
            return out
        return one_at_a_time

    if args.prefix:
        load = backends.load_pattern_file

        def renamed(path):
            items = load(path)
            for p in items:
                p.name = f"{args.prefix}.{p.name.split('.', 1)[-1]}"
            return items
        backends.load_pattern_file = renamed
    previous = rc.set_codegen_lookup(lookup)
    results = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            runs = snapshot.corpus_runs() + snapshot.sample_runs() + snapshot.gemm_matrix_runs(work)
            if args.prefix:
                runs = [r for r in runs if "--patterns" in r[2]]
            if args.k:
                runs = [r for r in runs if args.k in r[0]]
            for label, model, run_args in runs:
                refused.clear()
                with contextlib.redirect_stderr(io.StringIO()):
                    res = CliRunner().invoke(cli, ["partition", str(model), *run_args, "-o", str(work / "o")])
                lines = (res.output or "").strip().splitlines()
                results[label] = {"exit": res.exit_code, "error": lines[-1] if res.exit_code and lines else "",
                                  "refused": list(refused)}
    finally:
        rc.set_codegen_lookup(previous)
    classes: dict[str, set] = collections.defaultdict(set)
    for label, r in results.items():
        for _backend, symbol, message in r["refused"]:
            text = message.replace(symbol, "F")
            text = re.sub(r"composite [A-Za-z_][^ ):,]*", "composite C", text)
            classes[text].add(label)
    with_refusals = sum(1 for r in results.values() if r["refused"])
    failed = [label for label, r in results.items() if r["exit"]]
    print(f"{len(results)} runs; {with_refusals} with a refused cutlass/cublas function; {len(failed)} other failures")
    for text, labels in sorted(classes.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"{len(labels):4d}  {text}")
        print(f"      e.g. {', '.join(sorted(labels)[:4])}")
    for label in failed:
        print(f"FAILED {label}: {results[label]['error']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
