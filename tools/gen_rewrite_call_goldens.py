"""Goldens for tests/dpl/test_rewrite_call.py: TVM 0.27's relax.dpl.rewrite_call on
tests/data/rewrite_call/probe.relax with three rewriters (run under a Python with
apache-tvm 0.27; never part of the test suite). The byocc test implements the same
rewriters with byocc's API."""
import pathlib

import tvm
from tvm.relax.dpl import is_op
from tvm.relax.dpl import rewrite_call
from tvm.relax.dpl import wildcard
from tvm.script import relax as R

D = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "rewrite_call"


def add_to_multiply():
    a, b = wildcard(), wildcard()
    return is_op("relax.add")(a, b), lambda e, m: R.multiply(m[a], m[b])


def relu_to_nested():
    x = wildcard()
    # a nested call: the normaliser binds the inner multiply to a fresh variable
    return is_op("relax.nn.relu")(x), lambda e, m: R.maximum(R.multiply(m[x], m[x]), m[x])


def never():
    x = wildcard()
    return is_op("relax.nn.softmax")(x), lambda e, m: None


def main():
    for name, make in (("add_to_multiply", add_to_multiply), ("relu_to_nested", relu_to_nested),
                       ("never", never)):
        mod = tvm.script.from_source((D / "probe.relax").read_text())
        pattern, rewriter = make()
        for gv, func in mod.functions_items():
            mod[gv] = rewrite_call(pattern, rewriter, func)
        (D / f"probe.{name}.txt").write_text(mod.script() + "\n")


if __name__ == "__main__":
    main()
