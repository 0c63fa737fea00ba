"""FuseOpsByPattern's shortcut plan for blocks whose groups are runs of consecutive bindings
(``group_plan._plan_runs``) gives the module the general plan gives: the same printed text on
random partitionable graphs, the corpus inputs and the residual benchmark generators, both
paths, and it is taken on them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import shared_glob
from randgraph import RandomChooser
from randgraph import random_partition_module

import byocc.transform.group_plan as group_plan
from byocc.backends import get_patterns_with_prefix
from byocc.ir import ByoccError
from byocc.text import parse_module
from byocc.text import print_module
from byocc.transform import partition

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def _modules():
    for seed in range(40):
        yield f"random-{seed}", random_partition_module(RandomChooser(seed))
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from genmodel import make_module_text
    finally:
        sys.path.pop(0)
    for kind in ("mlp", "transformer", "cnn"):
        yield f"gen-{kind}", parse_module(make_module_text(300, kind), kind)
    inputs = sorted(DATA.rglob("input.relax")) + shared_glob("conformance/cases/*/input.relax")
    for path in inputs:
        try:
            yield path.parent.name, parse_module(path.read_text(encoding="utf-8"), str(path))
        except ByoccError:
            continue


def _outputs(mod, monkeypatch, shortcut: bool) -> list[str]:
    calls = []
    real = group_plan._plan_runs

    def spy(*args):
        got = real(*args) if shortcut else False
        calls.append(got is not False)
        return got

    monkeypatch.setattr(group_plan, "_plan_runs", spy)
    out = []
    for backend in ("cutlass", "cublas"):
        for path in ("merge", "annotate"):
            try:
                out.append(print_module(partition(mod, get_patterns_with_prefix(backend), path=path)))
            except ByoccError as err:
                out.append(f"error: {err}")
    monkeypatch.undo()
    return out + [f"shortcut taken {sum(calls)} times"] if shortcut else out


MODULES = list(_modules())


@pytest.mark.parametrize("name,mod", MODULES, ids=[name for name, _ in MODULES])
def test_shortcut_plan_gives_the_general_plans_module(name, mod, monkeypatch):
    fast = _outputs(mod, monkeypatch, True)
    slow = _outputs(mod, monkeypatch, False)
    assert fast[:-1] == slow


def test_shortcut_is_taken_on_the_generators(monkeypatch):
    taken = [_outputs(mod, monkeypatch, True)[-1] for name, mod in MODULES if name.startswith("gen-")]
    assert all(line != "shortcut taken 0 times" for line in taken), taken


SEVERAL_OUTPUTS = """
@R.function
def main(x: R.Tensor((4, 4), dtype="float32"), w: R.Tensor((4, 4), dtype="float32"),
         b: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
    with R.dataflow():
        lv0 = R.matmul(x, w)
        lv1 = R.add(lv0, b)
        {first}
        {second}
        lv4 = R.add(lv2, lv3)
        R.output(lv4)
    return lv4
"""


@pytest.mark.parametrize("first,second", [
    ("lv2 = R.nn.relu(lv1)", "lv3 = R.nn.gelu(lv0)"),
    ("lv2 = R.nn.relu(lv0)", "lv3 = R.nn.gelu(lv1)"),
    ("lv2 = R.add(lv1, lv0)", "lv3 = R.nn.gelu(lv0)"),
    ("lv2 = R.add(lv0, lv1)", "lv3 = R.nn.gelu(lv1)"),
])
def test_shortcut_orders_several_outputs_as_the_general_plan(first, second, monkeypatch):
    from byocc.dpl import is_op
    from byocc.dpl import wildcard
    from byocc.transform import FuseOpsByPattern

    mod = parse_module(SEVERAL_OUTPUTS.format(first=first, second=second))
    pattern = is_op("relax.add")(is_op("relax.matmul")(wildcard(), wildcard()), wildcard())
    texts = []
    for shortcut in (True, False):
        calls = []
        real = group_plan._plan_runs

        def spy(*args, shortcut=shortcut, real=real, calls=calls):
            got = real(*args) if shortcut else False
            calls.append(got is not False)
            return got

        monkeypatch.setattr(group_plan, "_plan_runs", spy)
        texts.append(print_module(FuseOpsByPattern([("t.matmul_add", pattern)])(mod)))
        monkeypatch.undo()
        assert any(calls) == shortcut
    assert texts[0] == texts[1]
    assert "R.Tuple" in texts[0]  # the group has two outputs


def test_carried_use_lists_are_the_rewritten_blocks_own(monkeypatch):
    from byocc.transform.pattern_partition import FunctionIndex
    from byocc.transform.pattern_partition import block_usages

    seen = []
    real = FunctionIndex.seed_usages

    def check(self, known):
        for block, usages in known.values():
            fresh = block_usages(block)
            assert dict(usages) == dict(fresh)
            assert usages.position == fresh.position
            seen.append(len(block.bindings))
        real(self, known)

    from byocc.dpl import is_op
    from byocc.dpl import wildcard
    from byocc.transform import FuseOpsByPattern

    monkeypatch.setattr(FunctionIndex, "seed_usages", check)
    for _name, mod in MODULES:
        for backend in ("cutlass", "cublas"):
            try:
                partition(mod, get_patterns_with_prefix(backend), path="merge")
            except ByoccError:
                continue
    # groups whose intermediate values are used outside (several outputs), then a second
    # pattern over the rewritten block
    leaky = [("t.matmul_add", is_op("relax.add")(is_op("relax.matmul")(wildcard(), wildcard()), wildcard())),
             ("t.relu", is_op("relax.nn.relu")(wildcard())), ("t.gelu", is_op("relax.nn.gelu")(wildcard()))]
    before = len(seen)
    for first in ("lv2 = R.nn.relu(lv1)", "lv2 = R.nn.relu(lv0)", "lv2 = R.add(lv1, lv0)"):
        mod = parse_module(SEVERAL_OUTPUTS.format(first=first, second="lv3 = R.nn.gelu(lv0)"))
        FuseOpsByPattern(leaky)(mod)
    assert len(seen) > before
    assert len(seen) > 50  # blocks whose lists were carried over, each checked


BETWEEN = """
@R.function
def main(x: R.Tensor((4, 4), dtype="float32"), w: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
    with R.dataflow():
        lv0 = R.matmul(x, w)
        {between}
        lv3 = R.add(lv0, {operand})
        lv4 = R.multiply(lv3, lv2)
        R.output(lv4)
    return lv4
"""


@pytest.mark.parametrize("between,operand", [
    ("lv1 = R.nn.relu(x)\n        lv2 = R.nn.gelu(x)", "lv1"),  # one producer hoisted, one not
    ("lv2 = R.nn.gelu(x)\n        lv1 = R.nn.relu(x)", "lv1"),
    ("lv1 = R.nn.relu(x)\n        lv2 = R.nn.gelu(lv1)", "lv2"),  # a chain hoisted
    ("lv2 = R.nn.relu(x)\n        lv1 = R.nn.gelu(lv2)", "lv1"),
    ("lv1 = R.nn.relu(lv0)\n        lv2 = R.nn.gelu(x)", "lv1"),  # a cycle: backed out
    ("lv2 = R.nn.relu(lv0)\n        lv1 = R.nn.gelu(x)", "lv1"),  # a use of a member between
])
def test_shortcut_orders_bindings_between_members_as_the_general_plan(between, operand, monkeypatch):
    from byocc.dpl import is_op
    from byocc.dpl import wildcard
    from byocc.transform import FuseOpsByPattern

    mod = parse_module(BETWEEN.format(between=between, operand=operand))
    pattern = is_op("relax.add")(is_op("relax.matmul")(wildcard(), wildcard()), wildcard())
    texts = []
    for shortcut in (True, False):
        real = group_plan._plan_runs
        monkeypatch.setattr(group_plan, "_plan_runs",
                            lambda *a, shortcut=shortcut, real=real: real(*a) if shortcut else False)
        texts.append(print_module(FuseOpsByPattern([("t.matmul_add", pattern)])(mod)))
        monkeypatch.undo()
    assert texts[0] == texts[1]
