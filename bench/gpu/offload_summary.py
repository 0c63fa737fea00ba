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
    """(op name or callee name, is_function_call) of every call bound in ``func`` (explicit stack)."""
    from byocc.ir import Call
    from byocc.ir import Function
    from byocc.ir import GlobalVar
    from byocc.ir import Op
    from byocc.ir import SeqExpr

    stack = [func.body]
    while stack:
        seq = stack.pop()
        if not isinstance(seq, SeqExpr):
            continue
        for block in seq.blocks:
            for b in block.bindings:
                v = b.value
                if isinstance(v, Function):
                    stack.append(v.body)
                elif isinstance(v, Call):
                    if isinstance(v.op, Op):
                        yield v.op.name, None
                    elif isinstance(v.op, GlobalVar):
                        yield None, v.op.name_hint
                    else:  # a local composite function called inside a merged function
                        yield None, getattr(v.op, "name_hint", None)


def summarize(out_dir: Path) -> tuple[Counter, Counter]:
    from byocc.text import parse_module

    (path,) = sorted(out_dir.glob("*.partitioned.relax"))
    mod = parse_module(path.read_text())
    inner: dict[str, Counter] = {}
    for name in mod.names():
        if name == "main":
            continue
        c: Counter = Counter()
        for op, _ in _calls(mod[name]):
            if op in HEAVY:
                c[HEAVY[op]] += 1
        inner[name] = c
    host: Counter = Counter()
    off: Counter = Counter()
    for op, callee in _calls(mod["main"]):
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
