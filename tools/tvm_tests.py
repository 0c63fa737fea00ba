"""Run Apache TVM's own unit tests for the partitioning passes on byocc (issue 11).

TVM's test files are read from a TVM git checkout or mirror (never copied into this
repository) into a scratch folder, and run twice with pytest:

* under a real TVM (``--tvm-python``, a Python with apache-tvm 0.27): the tests TVM itself
  passes there without a GPU are the in-scope set (tests that need a GPU, ``tvm.compile`` or
  TIR are skipped or fail there and are out of scope);
* under byocc, with ``import tvm`` mapped onto byocc's facade by a thin shim package written
  into the scratch folder (:data:`SHIM`): ``tvm.relax`` -> ``byocc.relax``, ``tvm.script`` ->
  ``byocc.script``, and so on, plus ``tvm.testing``'s few helpers.

    python tools/tvm_tests.py --tvm-git /work/.mirror/apache+tvm/repo [--ref HEAD]
        [--tvm-python /path/to/tvm-venv/bin/python] [--files a.py,b.py] [--failures]

Prints, per file, the in-scope count and how many pass on byocc, the total percentage, and
with ``--failures`` the first line of each in-scope failure's error.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

FILES = [
    "test_transform_fuse_ops_by_pattern.py",
    "test_transform_merge_composite_functions.py",
    "test_transform_canonicalize_bindings.py",
    "test_dataflow_pattern.py",
    "test_codegen_cutlass.py",
    "test_codegen_cublas.py",
]

#: ``tvm/__init__.py`` of the shim: aliases ``tvm.X`` to ``byocc.X`` where byocc has the
#: module, and supplies what only tests use (``tvm.testing``).
SHIM = r'''
"""A thin name mapping of ``tvm`` onto byocc (tools/tvm_tests.py writes it; not byocc)."""
import importlib
import importlib.abc
import importlib.util
import os
import sys

import byocc
import byocc.ir as _ir
from byocc import relax, script
from byocc.ir import IRModule

HERE = os.path.dirname(os.path.abspath(__file__))
ALIASES = {"tvm.tir": "byocc.script.tirx", "tvm.tirx": "byocc.script.tirx"}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if not name.startswith("tvm.") or name.startswith("tvm.testing"):
            return None
        local = os.path.join(HERE, *name.split(".")[1:])
        for candidate in (local + ".py", os.path.join(local, "__init__.py")):
            if os.path.exists(candidate):  # a test-only helper of the shim itself
                return importlib.util.spec_from_file_location(name, candidate)
        real = ALIASES.get(name, "byocc." + name[4:])
        try:
            if importlib.util.find_spec(real) is None:
                return None
        except (ImportError, ValueError):
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return importlib.import_module(ALIASES.get(spec.name, "byocc." + spec.name[4:]))

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Alias())

TVMError = _ir.ByoccError
ir = _ir
tir = tirx = importlib.import_module("byocc.script.tirx")
__version__ = "byocc-" + byocc.__version__
'''

TESTING = r'''
"""``tvm.testing`` for the tests (skip markers for hardware, ``main``)."""
import sys

import numpy as np
import pytest

from byocc.ir import structural_equal as _structural_equal


def main():
    sys.exit(pytest.main([sys.argv[0]]))


def _needs(what):
    def mark(f=None, *a, **k):
        m = pytest.mark.skip(reason=f"needs {what}")
        return m(f) if callable(f) else m
    return mark


requires_cuda = requires_gpu = requires_cutlass = requires_cublas = _needs("a GPU")
requires_cuda_compute_version = lambda *a, **k: _needs("a GPU")
requires_llvm = _needs("LLVM")


def run_with_gpu_lock(f, *args, **kwargs):
    return f(*args, **kwargs)


def parameter(*values, ids=None, by_dict=None):
    if by_dict is not None:
        ids, values = list(by_dict), tuple(by_dict.values())
    return pytest.fixture(params=values, ids=ids)(lambda request: request.param)


def assert_allclose(actual, desired, rtol=1e-7, atol=1e-7):
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol)


def assert_structural_equal(lhs, rhs, map_free_vars=False):
    assert _structural_equal(lhs, rhs, map_free_vars), "not structurally equal"


from . import env  # noqa: E402
'''

#: ``tvm.testing.env``: what the build has (byocc has no TVM build flags and no GPU runtime).
ENV = r'''
def has_cublas():
    return False


def build_flag_enabled(flag):
    return False


def has_cuda_compute(*version):
    return False


has_cuda = has_gpu = lambda: False
'''


#: ``conftest.py`` of the scratch folder, on both sides: lifts the module-level "needs CUTLASS /
#: cuBLAS" skips of the two codegen files, so that their partition-only tests run; the tests
#: that build or run kernels fail under TVM without a GPU and so fall out of scope.
CONFTEST = r'''
import tvm.testing.env as _env

_env.has_cublas = lambda: True
_env.build_flag_enabled = lambda flag: True
'''

#: Test-only helpers of TVM that the files import but that belong to no pass: ``tvm_ffi``'s
#: structural equality, ``tvm.contrib.pickle_memoize`` (a cache decorator) and
#: ``tvm.topi.testing`` (numpy references used only by the GPU tests).
EXTRA = {
    "tvm_ffi/__init__.py": "from byocc.ir import structural_equal, structural_hash  # noqa: F401\n",
    "tvm/contrib/pickle_memoize.py": "def memoize(key, save_at_exit=False):\n    return lambda f: f\n",
    "tvm/topi/__init__.py": "",
    "tvm/topi/testing.py": "",
}


#: Calls that compile or run a module: a test that makes one needs ``tvm.compile`` (out of the
#: issue's scope even where TVM's CPU build passes it).
COMPILE_CALLS = {"tvm.compile", "tvm.build", "relax.build", "relax.VirtualMachine", "tvm.relax.build"}


def needs_compile(source: str) -> set[str]:
    """Names of the test functions of ``source`` that compile a module (directly or through
    helper functions of the same file)."""
    import ast

    tree = ast.parse(source)
    funcs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def dotted(node: ast.AST) -> str:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(node.id)
        return ".".join(reversed(parts))

    compiles: dict[str, bool] = {}

    def check(name: str, seen: set[str]) -> bool:
        if name in compiles:
            return compiles[name]
        seen.add(name)
        found = False
        for node in ast.walk(funcs[name]):
            if isinstance(node, ast.Call):
                callee = dotted(node.func)
                if callee in COMPILE_CALLS:
                    found = True
                    break
                if callee in funcs and callee not in seen and check(callee, seen):
                    found = True
                    break
        compiles[name] = found
        return found

    return {name for name in funcs if name.startswith("test_") and check(name, set())}


def read_tvm_files(git: Path, ref: str, files: list[str], dest: Path) -> None:
    for name in files:
        text = subprocess.run(["git", "--git-dir", str(git), "show", f"{ref}:tests/python/relax/{name}"],
                              check=True, capture_output=True, text=True).stdout
        (dest / name).write_text(text)


def run_pytest(python: str, folder: Path, files: list[str], env: dict, xml: Path) -> dict:
    """{test id: (outcome, message)} for one pytest run over ``files``."""
    subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors",
                    f"--junitxml={xml}", *files],
                   cwd=folder, env=env, capture_output=True, text=True)
    results = {}
    if not xml.exists():
        return results
    for case in ET.parse(xml).getroot().iter("testcase"):
        key = f"{case.get('classname', '').split('.')[-1]}::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = "failed", (child.get("message") or "").strip()
                if message == "collection failure":  # the file did not import: keep the cause
                    lines = (child.text or "").strip().splitlines()
                    message = "collection failure: " + (lines[-1] if lines else "")
            elif child.tag == "skipped":
                outcome, message = "skipped", (child.get("message") or "").strip()
        results[key] = (outcome, message)
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tvm-git", required=True, type=Path, help="a TVM git directory (bare mirror or .git)")
    ap.add_argument("--ref", default="HEAD")
    ap.add_argument("--tvm-python", help="a Python with apache-tvm 0.27 (defines the in-scope set)")
    ap.add_argument("--files", default=",".join(FILES))
    ap.add_argument("--failures", action="store_true", help="list each in-scope failure")
    args = ap.parse_args()
    files = [f for f in args.files.split(",") if f]
    with tempfile.TemporaryDirectory(prefix="byocc-tvm-tests-") as tmp:
        root = Path(tmp)
        tests = root / "tests"
        tests.mkdir()
        read_tvm_files(args.tvm_git, args.ref, files, tests)
        shim = root / "shim" / "tvm"
        shim.mkdir(parents=True)
        (shim / "__init__.py").write_text(SHIM)
        (shim / "testing").mkdir()
        (shim / "testing" / "__init__.py").write_text(TESTING)
        (shim / "testing" / "env.py").write_text(ENV)
        for rel, text in EXTRA.items():
            (root / "shim" / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / "shim" / rel).write_text(text)
        (tests / "conftest.py").write_text(CONFTEST)
        base_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        in_scope = None
        if args.tvm_python:
            tvm = run_pytest(args.tvm_python, tests, files, base_env, root / "tvm.xml")
            in_scope = {k for k, (o, _) in tvm.items() if o == "passed"}
        env = dict(base_env, PYTHONPATH=str(root / "shim"))
        ours = run_pytest(sys.executable, tests, files, env, root / "byocc.xml")
        total_scope = total_pass = 0
        print(f"{'file':<46} {'in scope':>8} {'byocc passes':>12}")
        for name in files:
            stem = name[:-3]
            compiled = needs_compile((tests / name).read_text())
            keys = [k for k in (in_scope if in_scope is not None else ours) if k.startswith(stem + "::")
                    and k.split("::", 1)[1].split("[", 1)[0] not in compiled]
            dropped = sorted({k.split("::", 1)[1] for k in (in_scope or ()) if k.startswith(stem + "::")
                              and k.split("::", 1)[1].split("[", 1)[0] in compiled})
            if in_scope is None:  # no TVM: every collected test that TVM would not skip
                keys = [k for k in keys if ours[k][0] != "skipped"]
            passed = [k for k in keys if ours.get(k, ("missing", ""))[0] == "passed"]
            total_scope += len(keys)
            total_pass += len(passed)
            print(f"{name:<46} {len(keys):>8} {len(passed):>12}")
            if dropped:
                print(f"    (out of scope, they call tvm.compile: {', '.join(dropped)})")
            collect = ours.get(f"::{stem}")
            if collect is not None:
                print(f"    (the file fails to load on byocc: {collect[1][:150]})")
            if args.failures:
                for k in sorted(set(keys) - set(passed)):
                    outcome, message = ours.get(k, ("not collected", ""))
                    print(f"    {k.split('::', 1)[1]}: {outcome}: {message.splitlines()[0][:150] if message else ''}")
        pct = 100.0 * total_pass / total_scope if total_scope else 0.0
        print(f"{'total':<46} {total_scope:>8} {total_pass:>12}  ({pct:.1f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
