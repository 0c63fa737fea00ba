"""Bad input gives one located error (file:line:column) of byocc's hierarchy, never a
Python exception; the column points at the offending token."""

from __future__ import annotations

import pytest

from byocc.ir import ParseError
from byocc.ir import TypeInferenceError
from byocc.ir import UnsupportedError
from byocc.text import parse_module

BASE = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        with R.dataflow():
            gv: R.Tensor((10, 10), dtype="float32") = R.multiply(x, y)
            R.output(gv)
        return gv
"""
# column helpers for line 6 (the binding) and line 4 (the signature)
BINDING = "            gv: R.Tensor((10, 10), dtype=\"float32\") = "
CALL_COL = len(BINDING) + 1  # where R.multiply starts


def col(line: str, fragment: str) -> int:
    return line.index(fragment) + 1


CASES = [
    # (name, old, new, error class, line, column, message fragment)
    ("missing colon", "class Module:", "class Module", ParseError, 2, 13, "expected '(' or ':' but found the end of the line"),
    ("bad dtype in annotation", 'gv: R.Tensor((10, 10), dtype="float32")', 'gv: R.Tensor((10, 10), dtype="float33")',
     ParseError, 6, col(BINDING, '"float32"') + 1, 'unknown data type "float33"'),
    ("bad positional dtype", 'y: R.Tensor((10, 10), dtype="float32")', 'y: R.Tensor((10, 10), "float33")',
     ParseError, 4, 76, 'unknown data type "float33"'),
    ("undefined variable", "R.multiply(x, y)", "R.multiply(x, zz)", ParseError, 6, CALL_COL + 14, "undefined variable 'zz'"),
    ("unknown operator", "R.multiply(x, y)", "R.foo(x, y)", UnsupportedError, 6, CALL_COL, "unknown operator R.foo"),
    ("unknown nested operator", "R.multiply(x, y)", "R.nn.frobnicate(x)", UnsupportedError, 6, CALL_COL,
     "unknown operator R.nn.frobnicate"),
    ("bad keyword", "R.multiply(x, y)", "R.multiply(x, y, axis=1)", TypeInferenceError, 6, CALL_COL, "unexpected keyword argument 'axis'"),
    ("inconsistent dedent", "        return gv", "      return gv", ParseError, 8, 7, "inconsistent indentation"),
    ("unexpected indent", "            R.output(gv)", "                R.output(gv)", ParseError, 7, 17, "unexpected indentation"),
    ("stray character", "R.multiply(x, y)", "R.multiply(x, y) $", ParseError, 6, CALL_COL + 17, "unexpected character '$'"),
    ("unclosed bracket", "R.multiply(x, y)", "R.multiply(x, y", ParseError, 7, 13,
     "the '(' at line 6, column 65 is never closed"),
    ("unclosed string", 'dtype="float32") = R', 'dtype="float32) = R', ParseError, 6, col(BINDING, '"float32"'), "an unclosed string"),
    ("annotation does not match", 'gv: R.Tensor((10, 10), dtype="float32")', 'gv: R.Tensor((10, 11), dtype="float32")',
     TypeInferenceError, 6, 17, "dimension 1 (11) does not match the value's 10"),
    ("wrong dtype annotation", 'gv: R.Tensor((10, 10), dtype="float32")', 'gv: R.Tensor((10, 10), dtype="float16")',
     TypeInferenceError, 6, 17, "dtype float16 does not match the value's float32"),
    ("parameter without type", 'y: R.Tensor((10, 10), dtype="float32")', "y", ParseError, 4, 54, "parameter 'y' needs a type annotation"),
    ("output of unbound name", "R.output(gv)", "R.output(gg)", ParseError, 7, 22, "R.output: 'gg' is not bound in this dataflow block"),
    ("no return", "        return gv\n", "", ParseError, 4, 9, "function 'main' has no return statement"),
    ("cls without alias", "R.multiply(x, y)", "cls.f(x, y)", ParseError, 6, CALL_COL, "undefined variable 'cls'"),
    ("missing member", "R.multiply(x, y)", "Module.nothing(x, y)", ParseError, 6, CALL_COL, "the module has no function 'nothing'"),
    ("return type mismatch", '-> R.Tensor((10, 10), dtype="float32")', '-> R.Tensor((10, 10), dtype="float16")',
     TypeInferenceError, 8, 9, "does not match the return type"),
    ("missing decorator", "    @R.function\n", "", ParseError, 3, 9, "needs the @R.function decorator"),
    ("wrong decorator", "@R.function", "@R.fnction", ParseError, 3, 6, "expected @R.function, found @R.fnction"),
    ("undefined dimension", "R.Tensor((10, 10), dtype=\"float32\") = R", "R.Tensor((n, 10), dtype=\"float32\") = R",
     ParseError, 6, 27, "undefined symbolic dimension 'n'"),
    ("bad quoted dimension", "R.Tensor((10, 10), dtype=\"float32\") = R", "R.Tensor((\"n +\", 10), dtype=\"float32\") = R",
     ParseError, 6, 27, 'in the quoted dimension "n +"'),
    ("tuple index out of range", "R.multiply(x, y)", "(x, y)[2]", TypeInferenceError, 6, CALL_COL + 7,
     "tuple index 2 is out of range for a tuple of 2 fields"),
    ("operator type error", "R.multiply(x, y)", "R.matmul(x, R.sum(y, axis=[0, 1]))", TypeInferenceError, 6, CALL_COL,
     "relax.matmul"),
    ("unknown metadata key", "R.multiply(x, y)", 'R.multiply(x, metadata["nope"][0])', ParseError, 6, CALL_COL + 14,
     'unknown metadata key "nope"'),
    ("statement after return", "        return gv\n", "        return gv\n        return gv\n", ParseError, 9, 9,
     "statement after return"),
    ("nested dataflow", "            R.output(gv)", "            with R.dataflow():\n                pass\n            R.output(gv)",
     ParseError, 7, 13, "dataflow blocks cannot be nested"),
    ("if statement", "        return gv", "        if x:\n            z = x\n        else:\n            q = y\n        return gv",
     ParseError, 8, 9, "both branches of if/else must end by binding the same variable"),
    ("bad R.Tensor argument", 'gv: R.Tensor((10, 10), dtype="float32")', "gv: R.Tensor((10, 10), dtyp=1)",
     ParseError, 6, 36, "R.Tensor got an unexpected keyword argument 'dtyp'"),
    # an annotated binding of a runtime-module reference (was an internal error)
    ("annotated module reference", 'gv: R.Tensor((10, 10), dtype="float32") = R.multiply(x, y)',
     'gv: R.Object = metadata["ffi.Module"][0]', ParseError, 6, 28, "this is not a value"),
]


@pytest.mark.parametrize("name, old, new, cls, line, column, fragment", CASES, ids=[c[0] for c in CASES])
def test_located_error(name, old, new, cls, line, column, fragment):
    assert old in BASE, old
    text = BASE.replace(old, new, 1)
    with pytest.raises(cls) as info:
        parse_module(text, "model.relax")
    err = info.value
    assert fragment in err.message
    assert (err.span.source, err.span.line, err.span.column) == ("model.relax", line, column), str(err)
    assert "\n" not in err.message


@pytest.mark.parametrize("text, fragment", [
    ("", "no module or function found"),
    ("# only a comment\n\n", "no module or function found"),
    ("x = 1\n", "unexpected statement at the top level"),
    ("@I.ir_module\nclass M:\n    pass\n@I.ir_module\nclass N:\n    pass\n", "a file holds one module"),
    ("@I.ir_module\nclass M:\n    x = R.add(1, 2)\n", "expected NAME = R.ExternFunc"),
    ("@I.ir_module\nclass M:\n", "unexpected end of input"),
    ("@R.function\ndef f(x: R.Tensor((2,), \"float32\")):\n    return (x", "unexpected end of input"),
])
def test_whole_file_errors(text, fragment):
    with pytest.raises(ParseError, match=fragment):
        parse_module(text)


def test_unexpected_end_of_input_points_at_the_last_line():
    with pytest.raises(ParseError) as info:
        parse_module(BASE[:BASE.index("R.multiply(x, y)") + 11], "m.relax")
    assert info.value.span.line == 6
    assert "unexpected end of input" in info.value.message
    assert "is never closed" in info.value.message


def test_deep_nesting_is_an_error_not_a_crash():
    deep = BASE.replace("R.multiply(x, y)", "R.multiply(x, " + "R.nn.relu(" * 3000 + "y" + ")" * 3000 + ")")
    with pytest.raises(ParseError, match="nested too deeply"):
        parse_module(deep)
    parens = BASE.replace("R.multiply(x, y)", "R.multiply(x, " + "(" * 3000 + "y" + ")" * 3000 + ")")
    assert parse_module(parens)["main"] is not None
