"""`byocc check` reports every independent problem, in file order, up to a limit (issue 9,
class 4): it reported one of three, and not the first. A statement that fails because an
earlier one failed (it reads the earlier one's variable) is a consequence, not a problem."""

from __future__ import annotations

import re

from click.testing import CliRunner

from byocc.cli import cli

HEADER = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"
T = 'R.Tensor((10, 10), dtype="float32")'


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def func(name: str, body: list[str], params: str = f"x: {T}") -> str:
    lines = ["    @R.function", f"    def {name}({params}) -> {T}:"] + [f"        {b}" for b in body]
    return "\n".join(lines) + "\n"


def test_three_independent_problems_in_three_functions(tmp_path):
    model = tmp_path / "three.relax"
    model.write_text(HEADER + "\n".join([
        func("f", [f"gv: {T} = R.add(x, y)", "return gv"], f'x: {T}, y: R.Tensor((10, 10), dtype="float16")'),
        func("g", [f"gv: {T} = R.add(x, zz)", "return gv"]),
        func("main", [f"gv: {T} = R.nosuch(x)", "return gv"]),
    ]))
    result = run("check", model)
    assert result.exit_code == 1
    located = [line for line in result.stderr.splitlines() if re.match(r"^\S+:\d+:\d+: error: ", line)]
    assert located == [
        f"{model}:8:51: error: relax.add: binary operators must have the same dtype for both operands, "
        "but the LHS is float32 and the RHS is float16",
        f"{model}:13:60: error: undefined variable 'zz'",
        f"{model}:18:51: error: unknown operator R.nosuch",
    ]
    assert result.stderr.endswith("3 errors\n")


def test_problems_in_one_function_and_their_consequences(tmp_path):
    model = tmp_path / "one.relax"
    model.write_text(HEADER + func("main", [
        f"a: {T} = R.add(x, R.const(1, \"int32\"))",   # 1: a problem
        f"b: {T} = R.multiply(a, a)",                  # reads a: a consequence, not reported
        "c = R.nosuch(x)",                             # 2: independent
        f"d: {T} = R.add(x, qq)",                      # 3: independent
        f"e: {T} = R.add(b, d)",                       # reads b and d: consequence
        "return e",                                    # consequence
    ]))
    result = run("check", model)
    assert result.exit_code == 1
    located = [line.split(": error: ")[1] for line in result.stderr.splitlines() if ": error: " in line]
    assert len(located) == 3, result.stderr
    assert located[1:] == ["unknown operator R.nosuch", "undefined variable 'qq'"]
    assert result.stderr.endswith("3 errors\n")


def test_at_most_twenty_problems_are_reported(tmp_path):
    model = tmp_path / "many.relax"
    model.write_text(HEADER + func("main", [f"v{i} = R.nosuch{i}(x)" for i in range(30)] + ["return x"]))
    result = run("check", model)
    assert result.exit_code == 1
    assert result.stderr.count(": error: unknown operator R.nosuch") == 20
    assert "note: stopped after 20 errors" in result.stderr
    assert result.stderr.endswith("20 errors\n")


def test_a_single_problem_is_reported_alone(tmp_path):
    model = tmp_path / "single.relax"
    model.write_text(HEADER + func("main", ["gv = R.nosuch(x)", "return gv"]))
    result = run("check", model)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == f"{model}:8:14: error: unknown operator R.nosuch"
    assert "errors" not in result.stderr
