"""The reader's cache of operator calls (byocc/text/_parse_expr.py, ``_CALL_CACHE``) never
changes what is read: every corpus text reads to the same module (or the same error) with
the cache cold, warm from an earlier read, and switched off; keyword values that Python
hashes alike (1, 1.0, True; 0.0, -0.0) stay apart; symbolic shapes are never shared."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import shared_glob

import byocc.text._parse_expr as parse_expr
from byocc.ir import ByoccError
from byocc.ir import TirVar
from byocc.text import parse_module
from byocc.text import print_module

ROOT = Path(__file__).resolve().parents[2]
CORPUS = shared_glob("conformance/cases/*/*.relax") + sorted((ROOT / "tests" / "data").rglob("*.relax"))


def read(text: str) -> str:
    try:
        return print_module(parse_module(text, "t.relax"))
    except ByoccError as err:
        return f"error: {err}"


def read_uncached(text: str, monkeypatch) -> str:
    with monkeypatch.context() as m:
        m.setattr(parse_expr, "_call_key", lambda *a: None)
        return read(text)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_reads_the_same_with_and_without_the_cache(path, monkeypatch):
    text = path.read_text(encoding="utf-8")
    parse_expr._CALL_CACHE.clear()
    cold = read(text)
    warm = read(text)
    assert cold == warm == read_uncached(text, monkeypatch)


def func(body: str, params: str = 'x: R.Tensor((2, 3), dtype="float32")') -> str:
    return ("@I.ir_module\nclass Module:\n    @R.function\n"
            f"    def main({params}):\n" + "".join(f"        {line}\n" for line in body.splitlines()))


@pytest.mark.parametrize("values", [("1", "1.0", "True"), ("0.0", "-0.0"), ("[1]", "1", "(1,)")])
def test_keyword_values_python_hashes_alike_stay_apart(values, monkeypatch):
    for v in values:
        text = func(f"a = R.sum(x, axis=-1)\nb = R.nn.leakyrelu(x, alpha={v})\nc = R.sum(x, axis={v})\nreturn x")
        parse_expr._CALL_CACHE.clear()
        for other in values:  # fill the cache with the look-alikes first
            read(func(f"b = R.nn.leakyrelu(x, alpha={other})\nc = R.sum(x, axis={other})\nreturn x"))
        assert read(text) == read_uncached(text, monkeypatch)


def test_symbolic_shapes_are_not_shared_between_functions():
    one = ('    @R.function\n    def f{i}(x: R.Tensor(("n", 3), dtype="float32")):\n'
           "        y = R.nn.relu(x)\n        return y\n")
    mod = parse_module("@I.ir_module\nclass Module:\n" + one.format(i=1) + one.format(i=2), "t.relax")
    dims = []
    for name in ("f1", "f2"):
        f = mod[name]
        n = f.params[0].struct_info.shape[0]
        call = f.body.body.struct_info
        assert isinstance(n, TirVar) and call.shape[0] is n
        dims.append(n)
    assert dims[0] is not dims[1]


def test_a_bad_call_reports_every_time(monkeypatch):
    text = func("a = R.nn.relu(x)\nb = R.matmul(x, x)\nreturn b")
    parse_expr._CALL_CACHE.clear()
    first = read(text)
    assert first.startswith("error:") and first == read(text) == read_uncached(text, monkeypatch)
