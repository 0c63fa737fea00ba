"""Start-up time of the byocc CLI, against the bare interpreter.

Times, as separate processes, each several times (median reported):

* ``python -c pass``                       the floor: interpreter start-up
* ``python -c "import click, lark, rich"``  the dependencies alone (the ratio's base)
* ``byocc --help``                         the group and its commands only
* ``byocc show samples/<small>.relax``     parser + printer on a small module
* ``python -c "import byocc.relax"``        only if that module exists

``byocc`` is run as ``python -m byocc`` with the repository first on ``sys.path``, so the
numbers measure this checkout (pass ``--byocc byocc`` to time an installed command).

Ends with the ratio ``byocc show`` / ``import click, lark, rich`` (target <= 2). Medians
of wall time mislead on a loaded machine, so the ratio is also given on the best run of
each and on user+system CPU time of the child processes.

Usage: python bench/startup.py [-n REPEAT] [--byocc COMMAND] [--sample FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def time_command(argv: list[str], repeat: int, env: dict[str, str]) -> tuple[float, int, float, float]:
    """Median wall time in seconds over ``repeat`` runs (after one warm-up), the exit code,
    the best wall time and the median CPU time (user + system of the child)."""
    code = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, check=False).returncode
    times, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(times), code, min(times), statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--repeat", type=int, default=7, help="runs per command (median)")
    parser.add_argument("--byocc", default=f"{shlex.quote(sys.executable)} -m byocc",
                        help="command that runs byocc (default: this checkout via python -m)")
    parser.add_argument("--sample", default="samples/seed.relax", help="module for `show`")
    args = parser.parse_args()

    env = dict(os.environ)
    # An installed package has its bytecode compiled (pip does it at install time); a
    # PYTHONDONTWRITEBYTECODE environment would otherwise time the compiler, not byocc.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    byocc = shlex.split(args.byocc)
    python = [sys.executable]

    deps = 'python -c "import click, lark, rich"'
    show = f"byocc show {args.sample}"
    rows: list[tuple[str, list[str]]] = [
        ("python -c pass", python + ["-c", "pass"]),
        (deps, python + ["-c", "import click, lark, rich"]),
        ("byocc --help", byocc + ["--help"]),
        (show, byocc + ["show", args.sample]),
    ]
    sys.path.insert(0, str(ROOT))
    if importlib.util.find_spec("byocc.relax") is not None:
        rows.append(('python -c "import byocc.relax"', python + ["-c", "import byocc.relax"]))

    results = []
    for label, argv in rows:
        seconds, code, best, cpu = time_command(argv, args.repeat, env)
        results.append((label, seconds, code, best, cpu))

    floor = results[0][1]
    width = max(len(r[0]) for r in results)
    print(f"{'command':<{width}}  {'median ms':>9}  {'best ms':>7}  {'cpu ms':>6}  {'x python':>8}  exit")
    for label, seconds, code, best, cpu in results:
        print(f"{label:<{width}}  {seconds * 1e3:9.1f}  {best * 1e3:7.1f}  {cpu * 1e3:6.1f}  "
              f"{seconds / floor:8.2f}  {code:>4}")
    by_label = {r[0]: r for r in results}
    d, s = by_label[deps], by_label[show]
    print(f"byocc show / import click, lark, rich: {s[1] / d[1]:.2f} (median wall), "
          f"{s[3] / d[3]:.2f} (best wall), {s[4] / d[4]:.2f} (cpu); target <= 2")
    return 0 if all(r[2] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
