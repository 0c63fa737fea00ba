"""``byocc verify`` over every partition run of conformance corpora (issue 9, class 5).

For each case folder (``case.json`` + ``input.relax``) and each of its runs that has
``args`` and an ``expected`` file (a partition TVM completed), runs
``byocc verify input.relax ARGS --trials N`` in-process and reports every run that does not
exit 0. Prints one line per failure and a final ``N passed, M failed`` line; exit status 1
if anything failed.

    python tools/verify_corpus.py ../shared/conformance/cases -j 2
    python tools/verify_corpus.py some/cases -k layer_norm -v
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def partition_runs(roots: list[Path], keyword: str | None = None) -> list[tuple[str, str, list[str]]]:
    """``(case folder, run name, partition args)`` for every partition run with an expected file."""
    runs = []
    for root in roots:
        cases = [root] if (root / "case.json").is_file() else sorted(p.parent for p in root.glob("*/case.json"))
        for case in cases:
            spec = json.loads((case / "case.json").read_text())
            for r in spec.get("runs", []):
                if "args" not in r or "expected" not in r:
                    continue
                label = f"{case.name}/{r['name']}"
                if keyword and keyword not in label:
                    continue
                runs.append((str(case), r["name"], list(r["args"])))
    return runs


def verify_one(job: tuple[str, str, list[str], int]) -> tuple[str, int, str]:
    """Run ``byocc verify`` on one run; ``(label, exit code, stderr)``."""
    case, name, args, trials = job
    from click.testing import CliRunner

    from byocc.cli import cli

    folder = Path(case)
    argv = ["verify", str(folder / "input.relax"), *args, "--trials", str(trials)]
    if "--patterns" in args:  # pattern files are named relative to the case folder
        i = args.index("--patterns")
        argv[2 + i + 1] = str(folder / args[i + 1])
    result = CliRunner().invoke(cli, argv)
    return f"{folder.name}/{name}", result.exit_code, result.stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", type=Path,
                        default=[Path(__file__).resolve().parents[2] / "shared" / "conformance" / "cases"])
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("-k", dest="keyword", help="only runs whose case/run contains this")
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("-v", "--verbose", action="store_true", help="print each failure's stderr")
    opts = parser.parse_args(argv)
    jobs = [(c, n, a, opts.trials) for c, n, a in partition_runs(opts.roots, opts.keyword)]
    failed = 0
    with ProcessPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        for label, code, stderr in pool.map(verify_one, jobs, chunksize=8):
            if code != 0:
                failed += 1
                last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
                print(f"FAIL {label} (exit {code}): {last}")
                if opts.verbose:
                    print("    " + stderr.replace("\n", "\n    "))
    print(f"{len(jobs) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
