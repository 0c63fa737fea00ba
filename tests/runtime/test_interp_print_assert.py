"""R.print and R.assert_op run in the interpreter as TVM's run-time builtins do."""

import numpy as np
import pytest

from byocc.ir import InterpretError
from byocc.runtime import run_module
from byocc.text import parse_module

SRC = '''
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        R.print(x, format="x = {}")
        R.assert_op(R.const(FLAG, "bool"), x, format="x was {}")
        y: R.Tensor((2,), dtype="float32") = R.add(x, x)
        return y
'''


def test_print_writes_the_formatted_values_and_the_function_goes_on(capsys):
    mod = parse_module(SRC.replace("FLAG", "True"))
    out = run_module(mod, [np.array([1.0, 2.0], np.float32)])
    assert "x = [1. 2.]" in capsys.readouterr().out
    np.testing.assert_array_equal(np.asarray(out), [2.0, 4.0])


def test_a_false_assertion_stops_with_the_formatted_message():
    mod = parse_module(SRC.replace("FLAG", "False"))
    with pytest.raises(InterpretError, match=r"R.assert_op failed: x was \[1. 2.\]"):
        run_module(mod, [np.array([1.0, 2.0], np.float32)])
