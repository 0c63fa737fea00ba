"""Differential test against Apache TVM 0.27 (not part of the test suite: needs a Python with
apache-tvm installed, e.g. a venv, given by --tvm-python).

    python tools/tvm_diff.py --tvm-python /path/to/tvm-venv/bin/python --cases 200 --seed 1

Generates random partitionable graphs (tests/randgraph.py), prints them, and for every path
(annotate, merge) x table (cutlass, cublas, cublas+cutlass, cutlass+cublas) x bind-constants
setting compares byocc's partition output with TVM's, text for text. Cases TVM itself
rejects are counted, not compared. Writes mismatches under --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

TABLES = [["cutlass"], ["cublas"], ["cublas", "cutlass"], ["cutlass", "cublas"]]
CONFIGS = [(path, tables, bind) for path in ("annotate", "merge") for tables in TABLES for bind in (True, False)]

TVM_SIDE = r"""
import json, sys
import tvm
from tvm import relax
import tvm.relax.backend.cuda.cutlass, tvm.relax.backend.cuda.cublas
from tvm.relax.backend import get_patterns_with_prefix
jobs = json.load(open(sys.argv[1]))
out = {}
for case, text in jobs["cases"].items():
    try:
        mod0 = tvm.script.from_source(text)
    except Exception as e:
        out[case] = {"parse_error": repr(e)[:200]}
        continue
    res = {}
    for key, (path, tables, bind) in jobs["configs"].items():
        try:
            pats = []
            for t in tables:
                pats += get_patterns_with_prefix(t)
            mod = relax.transform.FuseOpsByPattern(pats, bind_constants=bind, annotate_codegen=(path == "annotate"))(mod0)
            if path == "merge":
                mod = relax.transform.MergeCompositeFunctions()(mod)
            res[key] = mod.script()
        except Exception as e:
            res[key] = {"error": repr(e)[:300]}
    out[case] = res
json.dump(out, open(sys.argv[2], "w"))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tvm-python", required=True)
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-bindings", type=int, default=25)
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "byocc_tvm_diff"))
    args = ap.parse_args()

    from randgraph import RandomChooser
    from randgraph import random_partition_module

    from byocc.backends import get_patterns_with_prefix
    from byocc.text import parse_module
    from byocc.text import print_module
    from byocc.transform import partition

    cases = {}
    for i in range(args.cases):
        mod = random_partition_module(RandomChooser(args.seed * 100003 + i), tensor_constants=False,
                                      max_bindings=args.max_bindings)
        cases[f"case{i:04d}"] = print_module(mod) + "\n"
    configs = {f"{p}.{'+'.join(t)}.{'bind' if b else 'nobind'}": (p, t, b) for p, t, b in CONFIGS}
    os.makedirs(args.out, exist_ok=True)
    jobs_file = os.path.join(args.out, "jobs.json")
    result_file = os.path.join(args.out, "tvm.json")
    with open(jobs_file, "w") as f:
        json.dump({"cases": cases, "configs": configs}, f)
    proc = subprocess.run([args.tvm_python, "-c", TVM_SIDE, jobs_file, result_file])
    if proc.returncode != 0:
        print("TVM side failed")
        return 2
    tvm = json.load(open(result_file))

    same = differ = tvm_err = both_err = byocc_only_err = tvm_parse = 0
    for case, text in cases.items():
        if "parse_error" in tvm[case]:
            tvm_parse += 1
            continue
        mod = parse_module(text, case)
        for key, (path, tables, bind) in configs.items():
            expected = tvm[case][key]
            try:
                pats = [p for t in tables for p in get_patterns_with_prefix(t)]
                got = print_module(partition(mod, pats, path=path, bind_constants=bind))
                err = None
            except Exception as e:  # noqa: BLE001 - any failure is a finding
                got, err = None, f"{type(e).__name__}: {e}"
            if isinstance(expected, dict):
                if err is not None:
                    both_err += 1
                else:
                    tvm_err += 1
                continue
            if err is not None:
                byocc_only_err += 1
                with open(os.path.join(args.out, f"{case}.{key}.err.txt"), "w") as f:
                    f.write(f"{err}\n\n{text}")
                continue
            if got.rstrip() == expected.rstrip():
                same += 1
            else:
                differ += 1
                base = os.path.join(args.out, f"{case}.{key}")
                open(base + ".input.relax", "w").write(text)
                open(base + ".tvm.relax", "w").write(expected)
                open(base + ".byocc.relax", "w").write(got)
    print(f"cases {len(cases)} (TVM could not parse {tvm_parse}); runs: same {same}, differ {differ}, "
          f"byocc error only {byocc_only_err}, TVM error only {tvm_err}, both error {both_err}")
    print(f"mismatches written under {args.out}")
    return 0 if differ == 0 and byocc_only_err == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
