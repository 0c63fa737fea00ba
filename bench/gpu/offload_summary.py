"""How many of a partitioned model's heavy operators (matmul, conv, norms, attention,
softmax) run in offloaded functions and how many stay on the host.

    PYTHONPATH=. python bench/gpu/offload_summary.py OUT_DIR [OUT_DIR...]

reads ``OUT_DIR/<stem>.partitioned.relax`` (``byocc partition -o OUT_DIR``) and prints one
line per folder: for each heavy operator kind, ``offloaded/total`` (each call of an
offloaded function counted once per call).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

HEAVY = {
    "relax.matmul": "matmul", "relax.nn.conv2d": "conv2d", "relax.nn.conv1d": "conv1d",
    "relax.nn.layer_norm": "layer_norm", "relax.nn.rms_norm": "rms_norm",
    "relax.nn.attention": "attention", "relax.nn.attention_bias": "attention",
    "relax.nn.softmax": "softmax", "relax.nn.batch_norm": "batch_norm",
}


def _calls(func):
    """``(op name, callee name, local function)`` of every call bound in ``func``'s body, in
    order; ``local function``: the Function a local variable callee is bound to."""
    from byocc.ir import Call
    from byocc.ir import Function
    from byocc.ir import GlobalVar
    from byocc.ir import Op
    from byocc.ir import SeqExpr

    local: dict = {}
    if not isinstance(func, Function) or not isinstance(func.body, SeqExpr):  # a PrimFunc
        return
    for block in func.body.blocks:
        for b in block.bindings:
            v = b.value
            if isinstance(v, Function):
                local[b.var] = v
            elif isinstance(v, Call):
                if isinstance(v.op, Op) and v.op.name == "relax.call_tir" and "rms_norm" in getattr(
                        v.args[0], "name_hint", ""):  # R.nn.rms_norm legalized (cutlass.rms_norm's form)
                    yield "relax.nn.rms_norm", None, None
                elif isinstance(v.op, Op):
                    yield v.op.name, None, None
                elif isinstance(v.op, GlobalVar):
                    yield None, v.op.name_hint, None
                else:
                    yield None, None, local.get(v.op)


def _local_counts(fn) -> Counter:
    """Heavy ops of one call of a local (composite) function; they hold operators only."""
    c: Counter = Counter()
    for op, _, _ in _calls(fn):
        if op in HEAVY:
            c[HEAVY[op]] += 1
    return c


def summarize(out_dir: Path) -> tuple[Counter, Counter]:
    from byocc.text import parse_module

    (path,) = sorted(out_dir.glob("*.partitioned.relax"))
    mod = parse_module(path.read_text())
    inner: dict[str, Counter] = {}

    def count(name: str) -> Counter:
        """Heavy ops run by one call of ``name``, its callees (composites) included. The
        callees of a function are counted before it (an explicit stack, no recursion)."""
        stack = [name]
        while stack:
            top = stack[-1]
            if top in inner:
                stack.pop()
                continue
            callees = [c for _, c, _ in _calls(mod[top]) if c in mod.names() and c != "main"]
            todo = [c for c in callees if c not in inner]
            if todo:
                stack += todo
                continue
            c: Counter = Counter()
            for op, callee, fn in _calls(mod[top]):
                if op in HEAVY:
                    c[HEAVY[op]] += 1
                elif callee in inner:
                    c.update(inner[callee])
                elif fn is not None:
                    c.update(_local_counts(fn))
            inner[top] = c
            stack.pop()
        return inner[name]

    for name in mod.names():
        if name != "main":
            count(name)
    host: Counter = Counter()
    off: Counter = Counter()
    for op, callee, _ in _calls(mod["main"]):
        if op in HEAVY:
            host[HEAVY[op]] += 1
        elif callee in inner:
            off.update(inner[callee])
    return off, host


def main(argv: list[str]) -> int:
    for d in argv:
        off, host = summarize(Path(d))
        kinds = sorted(set(off) | set(host))
        text = ", ".join(f"{k} {off[k]}/{off[k] + host[k]}" for k in kinds)
        print(f"{d}: offloaded/total: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
