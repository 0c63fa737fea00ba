"""Start-up time of the byocc CLI, against the bare interpreter.

Times, as separate processes, each several times (median reported):

* ``python -c pass``                       the floor: interpreter start-up
* ``byocc --help``                         the group and its commands only
* ``byocc show samples/<small>.relax``     parser + printer on a small module
* ``python -c "import byocc.relax"``        only if that module exists

``byocc`` is run as ``python -m byocc`` with the repository first on ``sys.path``, so the
numbers measure this checkout (pass ``--byocc byocc`` to time an installed command).

Usage: python bench/startup.py [-n REPEAT] [--byocc COMMAND] [--sample FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def time_command(argv: list[str], repeat: int, env: dict[str, str]) -> tuple[float, int]:
    """Median wall time in seconds over ``repeat`` runs (after one warm-up), and the exit code."""
    code = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, check=False).returncode
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times), code


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

    rows: list[tuple[str, list[str]]] = [
        ("python -c pass", python + ["-c", "pass"]),
        ("byocc --help", byocc + ["--help"]),
        (f"byocc show {args.sample}", byocc + ["show", args.sample]),
    ]
    sys.path.insert(0, str(ROOT))
    if importlib.util.find_spec("byocc.relax") is not None:
        rows.append(('python -c "import byocc.relax"', python + ["-c", "import byocc.relax"]))

    results = []
    for label, argv in rows:
        seconds, code = time_command(argv, args.repeat, env)
        results.append((label, seconds, code))

    floor = results[0][1]
    width = max(len(label) for label, _, _ in results)
    print(f"{'command':<{width}}  {'median ms':>9}  {'x python':>8}  exit")
    for label, seconds, code in results:
        print(f"{label:<{width}}  {seconds * 1e3:9.1f}  {seconds / floor:8.2f}  {code:>4}")
    return 0 if all(code == 0 for _, _, code in results) else 1


if __name__ == "__main__":
    sys.exit(main())
