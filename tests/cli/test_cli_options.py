"""Numeric and choice options are click types with their ranges and choices (issue 9, class 2).

A bad value is a usage error (exit 2) naming the option, never an internal error (70) or an
input error (1). Work that needs more memory than the machine has is refused up front with
the size it would need, and random inputs are drawn in their own dtype.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import click
import pytest
from conftest import run_cli as run

from byocc.cli import cli
from byocc.cli.options import MAX_DIM

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SEED = SAMPLES / "seed.relax"
SEED_PATTERNS = SAMPLES / "seed_patterns.py"
SYMBOLIC = """\
# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import relax as R

n = TypeVar("n")
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((n, 16), dtype="float16")) -> R.Tensor((n, 16), dtype="float16"):
        with R.dataflow():
            gv: R.Tensor((n, 16), dtype="float16") = R.nn.relu(x)
            R.output(gv)
        return gv
"""


@pytest.fixture()
def symbolic(tmp_path):
    path = tmp_path / "sym.relax"
    path.write_text(SYMBOLIC)
    return path


PARTITION = ["partition", SEED, "--patterns", SEED_PATTERNS]
VERIFY = ["verify", SEED, "--patterns", SEED_PATTERNS]
BAD_VALUES = [
    (["run", SEED, "--random-inputs", "-5"], "--random-inputs", "-5 is not in the range x>=0"),
    (["run", SEED, "--random-inputs", "abc"], "--random-inputs", "'abc' is not a valid integer"),
    (["run", "SYM", "--dim", "n=-3"], "--dim", "n: a dimension must be in [0, 2**62], got -3"),
    (["run", "SYM", "--dim", f"n={MAX_DIM + 1}"], "--dim", "a dimension must be in [0, 2**62]"),
    (["run", "SYM", "--dim", "n=x"], "--dim", "n: expected an integer value, got 'x'"),
    (["run", "SYM", "--dim", "n"], "--dim", "expected NAME=VALUE"),
    (["run", "SYM", "--dim", "=3"], "--dim", "expected NAME=VALUE"),
    (["run", "SYM", "--dim", "1n=3"], "--dim", "expected NAME=VALUE"),
    (VERIFY + ["--seed", "-1"], "--seed", "-1 is not in the range x>=0"),
    (VERIFY + ["--trials", "0"], "--trials", "0 is not in the range x>=1"),
    (VERIFY + ["--dim", "n=-3"], "--dim", "a dimension must be in [0, 2**62]"),
    (VERIFY + ["--path", "foo"], "--path", "'foo' is not one of 'annotate', 'merge'"),
    (VERIFY + ["--backend", "cutlas"], "--backend",
     "unknown backend 'cutlas' (known: cublas, cutlass); did you mean 'cutlass'?"),
    (VERIFY + ["--layout", "NCHW"], "--layout", "'NCHW' is not one of 'NHWC', 'none'"),
    (PARTITION + ["--path", "foo"], "--path", "'foo' is not one of 'annotate', 'merge'"),
    (PARTITION + ["--backend", "cutlas"], "--backend", "unknown backend 'cutlas'"),
    (PARTITION + ["--layout", "nhwc"], "--layout", "'nhwc' is not one of 'NHWC', 'none'"),
]


@pytest.mark.parametrize("args, option, message", BAD_VALUES, ids=[f"{a[0]} {' '.join(map(str, a[-2:]))}" for a, _, _ in BAD_VALUES])
def test_a_bad_option_value_is_a_usage_error(symbolic, args, option, message):
    args = [symbolic if a == "SYM" else a for a in args]
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert f"Invalid value for '{option}'" in result.stderr
    assert message in result.stderr
    assert "internal error" not in result.stderr


# Options whose value is a name or a path and so legitimately a plain string.
NAME_OR_PATH_METAVARS = {"FILE", "FILE.py", "FILE.npz", "FILE.json", "FILE.py:FUNC", "MODEL.onnx", "FUNC", "PASS", "DIR", "OUT.npz", "OUT.relax", "MODEL",
                         "CMD"}


def _commands():
    yield from sorted(cli.commands.items())


def test_every_numeric_or_choice_option_has_a_click_type():
    """The class, not the examples: an option whose value is neither a name nor a path must
    have a click type (a range, choices, or a custom type) so click rejects bad values."""
    untyped = []
    for name, command in _commands():
        for param in command.params:
            if not isinstance(param, click.Option) or param.is_flag or param.count:
                continue
            if isinstance(param.type, click.types.StringParamType) and param.metavar not in NAME_OR_PATH_METAVARS:
                untyped.append(f"{name} {param.opts[-1]} (metavar {param.metavar})")
            if isinstance(param.type, click.types.IntParamType) and not isinstance(param.type, click.IntRange):
                untyped.append(f"{name} {param.opts[-1]}: an int without a range")
    assert untyped == []


def test_a_dim_that_names_no_dimension_warns(symbolic):
    result = run("run", symbolic, "--dim", "m=3")
    assert result.exit_code == 0
    assert "warning: --dim m: 'main' has no symbolic dimension of that name (dimensions: n)" in result.stderr


def test_work_beyond_the_machines_memory_is_refused_with_its_size(symbolic, monkeypatch):
    import byocc.runtime.inputs as inputs

    monkeypatch.setattr(inputs, "available_memory", lambda: 1 << 30)
    result = run("run", symbolic, "--dim", "n=100000000000")
    assert result.exit_code == 1
    assert result.stderr == (f"{symbolic}: error: the random inputs would need 2.9 TiB of memory; "
                             "this machine has 1.0 GiB available\n"
                             "note: give smaller --dim values, or --inputs\n")
    result = run("verify", symbolic, "--patterns", SEED_PATTERNS, "--dim", "n=100000000000")
    assert result.exit_code == 1
    assert "the random inputs would need 2.9 TiB of memory" in result.stderr


def test_random_inputs_are_drawn_in_their_own_dtype():
    """A float16 input of 32 MiB must not pass through a 128 MiB float64 array."""
    import numpy as np

    from byocc.runtime import random_arguments
    from byocc.text import parse_module

    mod = parse_module(SYMBOLIC)
    n = 1 << 20  # n x 16 float16 = 32 MiB
    tracemalloc.start()
    try:
        args = random_arguments(mod["main"], 0, {"n": n})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    x = args["x"]
    assert x.dtype == np.float16 and x.shape == (n, 16)
    assert peak < 32 * 2**20 + 16 * 2**20, peak
    # the same values as one float64 draw cast to float16 (seeds keep their meaning)
    rng = np.random.default_rng(0)
    rng.integers(10, 50)  # a dimension's draw happens even when --dim fixes it
    expected = rng.standard_normal((4, 16)).astype(np.float16)
    small = random_arguments(mod["main"], 0, {"n": 4})["x"]
    np.testing.assert_array_equal(small, expected)
