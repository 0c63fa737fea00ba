"""The use-def and variable collectors of ``byocc.ir.analysis`` read a binding of a flat call
(an operator or a global on variables and constants) inline; what they collect is what the
generic visitor collects, order included, on random modules and the corpus inputs."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import shared_glob
from randgraph import RandomChooser
from randgraph import random_module
from randgraph import random_partition_module

import byocc.ir.analysis as analysis
from byocc.ir import ByoccError
from byocc.ir import Function
from byocc.text import parse_module

DATA = Path(__file__).resolve().parents[1] / "data"


def _functions():
    for seed in range(25):
        for make in (random_module, random_partition_module):
            mod = make(RandomChooser(seed))
            yield from (f for _, f in mod.functions.items() if isinstance(f, Function))
    for path in sorted(DATA.rglob("input.relax")) + shared_glob("conformance/cases/*/input.relax"):
        try:
            mod = parse_module(path.read_text(encoding="utf-8"), str(path))
        except ByoccError:
            continue
        yield from (f for _, f in mod.functions.items() if isinstance(f, Function))


def _collect(func):
    usage = analysis.collect_var_usage(func)
    return (list(usage.bound_values.items()), list(usage.downstream_usage.items()), usage.outputs,
            analysis.free_vars(func), analysis.bound_vars(func), analysis.all_vars(func),
            analysis.all_global_vars(func), list(analysis.analyze_var2value(func).items()))


FUNCTIONS = list(_functions())


def test_inline_reading_of_flat_calls_collects_what_the_visitor_collects(monkeypatch):
    assert len(FUNCTIONS) > 100
    fast = [_collect(f) for f in FUNCTIONS]
    monkeypatch.setattr(analysis, "_flat_call", lambda call: False)
    slow = [_collect(f) for f in FUNCTIONS]
    for f, a, b in zip(FUNCTIONS, fast, slow):
        assert a == b, f


@pytest.mark.parametrize("i", [0])
def test_flat_calls_are_read_inline(i, monkeypatch):
    seen = []
    real = analysis._flat_call
    monkeypatch.setattr(analysis, "_flat_call", lambda call: seen.append(1) or real(call))
    analysis.collect_var_usage(FUNCTIONS[i])
    assert seen
