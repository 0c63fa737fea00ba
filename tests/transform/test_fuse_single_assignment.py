"""FuseOpsByPattern refuses a module that binds one variable object twice (TVM raises a
ValueError: its grouping maps each bound variable to one group)."""

import pytest

from byocc.dpl import is_op
from byocc.dpl import wildcard
from byocc.ir import PassError
from byocc.text import parse_module
from byocc.transform import FuseOpsByPattern

TEXT = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32"), w: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        with R.dataflow():
            y: R.Tensor((4, 4), dtype="float32") = R.matmul(x, w, out_dtype="void")
            z: R.Tensor((4, 4), dtype="float32") = R.nn.relu(y)
            R.output(z)
        return z
'''

PATTERNS = [("dnnl.matmul_relu", is_op("relax.nn.relu")(is_op("relax.matmul")(wildcard(), wildcard())))]


def test_a_function_stored_under_two_names_is_refused_with_a_value_error():
    mod = parse_module(TEXT)
    mod["copy"] = mod["main"].with_attr("global_symbol", "copy")
    with pytest.raises(ValueError) as info:
        FuseOpsByPattern(PATTERNS)(mod)
    assert isinstance(info.value, PassError)
    message = str(info.value)
    assert "single-assignment" in message and "'y'" in message
    assert "'copy'" in message and "'main'" in message


def test_the_check_looks_only_at_the_entry_functions():
    mod = parse_module(TEXT)
    mod["copy"] = mod["main"].with_attr("global_symbol", "copy")
    out = FuseOpsByPattern(PATTERNS, entry_functions=["main"])(mod)
    assert any(name.startswith("fused_relax_matmul") for name in out.names())


def test_two_functions_with_their_own_variables_partition():
    mod = parse_module(TEXT)
    other = parse_module(TEXT.replace("def main", "def copy"))
    mod["copy"] = other["copy"]
    out = FuseOpsByPattern(PATTERNS)(mod)
    fused = [name for name in out.names() if "matmul" in name]
    assert len(fused) == 1  # the two groups are structurally equal: one function
