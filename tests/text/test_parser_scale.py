"""Size: a function of 100 000 bindings parses (statements are read in loops, never by
recursion per statement), in a few seconds."""

from __future__ import annotations

import time

from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Var
from byocc.text import parse_module

N = 100_000


def test_hundred_thousand_bindings():
    lines = ['@R.function', 'def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):',
             "    with R.dataflow():", "        a0 = R.add(x, x)"]
    lines += [f"        a{i} = a{i - 1}" for i in range(1, N)]
    lines += [f"        R.output(a{N - 1})", f"    return a{N - 1}"]
    start = time.process_time()
    func = parse_module("\n".join(lines))["main"]
    elapsed = time.process_time() - start
    (block,) = func.body.blocks
    assert isinstance(block, DataflowBlock) and len(block.bindings) == N
    assert type(block.bindings[0].var) is DataflowVar and type(block.bindings[-1].var) is Var
    assert block.bindings[-1].value is block.bindings[-2].var
    assert elapsed < 60  # about 3 s on a slow machine; a quadratic step would take hours
