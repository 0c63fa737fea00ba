"""The residual check's dependency search (backends.utils.has_dependency): the same answers
as TVM's unbounded search of the root's users, at a cost bounded by the bindings between
the two variables (the block's order), so deep residual networks partition in linear time."""

from __future__ import annotations

import random

from byocc.backends.utils import has_dependency
from byocc.dpl import VarUsages
from byocc.ir import DataflowBlock
from byocc.text import parse_module
from byocc.transform.pattern_partition import block_usages

T = 'R.Tensor((4, 4), dtype="float32")'


def _module(lines: list[str]) -> str:
    body = "\n".join(f"            {line}" for line in lines)
    return ("# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n"
            "@I.ir_module\nclass Module:\n    @R.function\n"
            f"    def main(x: {T}, y: {T}) -> {T}:\n        with R.dataflow():\n{body}\n"
            f"            R.output(gv)\n        return gv\n")


def _block(text: str) -> DataflowBlock:
    (block,) = parse_module(text)["main"].body.blocks
    return block


def _random_block(rng: random.Random, n: int) -> DataflowBlock:
    names = ["x", "y"]
    lines = []
    for i in range(n):
        op = rng.choice(["R.add", "R.multiply", "R.nn.relu"])
        args = [rng.choice(names[-6:] if rng.random() < 0.7 else names)]
        if op != "R.nn.relu":
            args.append(rng.choice(names))
        name = f"lv{i}"
        lines.append(f"{name}: {T} = {op}({', '.join(args)})")
        names.append(name)
    lines.append(f"gv: {T} = R.add({names[-1]}, x)")
    return _block(_module(lines))


class CountingUsages(VarUsages):
    """Counts the use lists a search reads."""

    __slots__ = ("reads",)

    def get(self, key, default=None):
        self.reads += 1
        return super().get(key, default)


def test_bounded_search_agrees_with_the_unbounded_one_on_random_blocks():
    rng = random.Random(10)
    checked = 0
    for _ in range(20):
        block = _random_block(rng, 40)
        usages = block_usages(block)
        assert isinstance(usages, VarUsages)
        plain = dict(usages)  # no positions: TVM's whole-descendant walk
        variables = [b.var for b in block.bindings]
        params = list(usages.keys() - set(variables))
        for a in variables + params:
            for b in variables + params:
                assert has_dependency(a, b, usages) == has_dependency(a, b, plain), (a, b)
                checked += 1
    assert checked > 30000


def test_positions_follow_the_block():
    block = _random_block(random.Random(1), 10)
    usages = block_usages(block)
    assert usages.position == {b.var: i for i, b in enumerate(block.bindings)}
    for var, users in usages.items():  # every user is bound after what it uses
        for user in users:
            assert usages.position[user] > usages.position.get(var, -1)


def test_residual_bound_before_the_root_reads_no_use_list():
    """A deep residual chain: the residual of the last layer was bound long before its root;
    TVM's search walks every later binding, the bounded one none."""
    lines = []
    prev = "x"
    for i in range(2000):
        lines.append(f"a{i}: {T} = R.nn.relu({prev})")
        lines.append(f"r{i}: {T} = R.add(a{i}, {prev})")
        prev = f"r{i}"
    lines.append(f"gv: {T} = R.add({prev}, x)")
    block = _block(_module(lines))
    usages = block_usages(block)
    counting = CountingUsages(usages, usages.position)
    counting.reads = 0
    var = {b.var.name_hint: b.var for b in block.bindings}
    assert not has_dependency(var["r10"], var["a1000"], counting)
    assert counting.reads == 0
    assert has_dependency(var["r1000"], var["a1000"], counting)
    assert counting.reads <= 2
    plain = CountingUsages(usages, None)
    plain.position = None  # as a plain mapping: the unbounded walk
    plain.reads = 0
    assert not has_dependency(var["r10"], var["a1000"], plain)
    assert plain.reads > 2000


def test_root_outside_the_block_and_identity():
    block = _random_block(random.Random(2), 5)
    usages = block_usages(block)
    x = next(v for v in usages if v.name_hint == "x")
    last = block.bindings[-1].var
    assert has_dependency(x, x, usages)
    assert has_dependency(last, x, usages) == has_dependency(last, x, dict(usages))
    assert not has_dependency(x, last, usages)
