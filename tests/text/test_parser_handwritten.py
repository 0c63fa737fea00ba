"""Input the printer never produces but people type (spec/textual-ir.md section 7.4): each
variant parses to the module whose canonical text is given."""

from __future__ import annotations

import pytest

from byocc.ir import DataflowVar
from byocc.ir import TensorStructInfo
from byocc.text import parse_module
from byocc.text import print_module

CANONICAL = """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        R.func_attr({"Composite": "a.b", "n": [1, 2]})
        with R.dataflow():
            lv: R.Tensor((2, 3), dtype="float32") = R.add(x, y)
            gv: R.Tensor((2, 3), dtype="float32") = R.multiply(lv, y)
            R.output(gv)
        return gv"""

HANDWRITTEN = """\
from __future__ import annotations
import tvm
from tvm.script import ir as I
from tvm.script import relax as R, tirx as T

# any class name; comments anywhere
@I.ir_module(check_well_formed=False)
class Net:   # trailing comment

    @R.function()
    def main(
        x: R.Tensor((2, 3), 'float32'),   # single quotes, positional dtype
        y: R.Tensor([2, 3], dtype="float32",),   # list shape, trailing comma
    ):
        with R.dataflow():
            lv = R.add(x,
                       y)
   \t
            gv = R.multiply(lv, y)
            R.output(gv,)
        R.func_attr({'n': [1, 2,], "Composite": "a.b"})
        return gv"""


def test_handwritten_module_reads_as_the_canonical_one():
    assert print_module(parse_module(HANDWRITTEN)) == CANONICAL


@pytest.mark.parametrize("variant", ["crlf", "no_final_newline", "extra_blank_lines", "tabs"])
def test_line_ending_and_whitespace_variants(variant: str):
    text = CANONICAL
    if variant == "crlf":
        text = text.replace("\n", "\r\n") + "\r\n"
    elif variant == "extra_blank_lines":
        text = "\n\n" + text.replace("\n        with", "\n\n      \n        with") + "\n\n   \n"
    elif variant == "tabs":
        text = text.replace("\n        ", "\n\t")
        text = text.replace("\n            ", "\n\t    ")
    assert print_module(parse_module(text)) == CANONICAL


def _one_binding(expr: str, ann: str = "", params: str = 'x: R.Tensor((2, 3), dtype="float32")') -> str:
    return f"""\
@R.function
def main({params}):
    y{ann} = {expr}
    return y
"""


@pytest.mark.parametrize("expr, printed", [
    ("R.reshape(x, (3, 2))", "R.reshape(x, R.shape([3, 2]))"),
    ("R.reshape(x, R.shape((3, 2)))", "R.reshape(x, R.shape([3, 2]))"),
    ("R.add(x, R.const(1.0))", 'R.add(x, R.const(1.0, "float32"))'),
    ("R.add(x, R.const(2, 'float32'))", 'R.add(x, R.const(2.0, "float32"))'),
    # nested calls are bound to fresh variables first (gv outside a dataflow block)
    ('R.matmul(x, R.permute_dims(x), out_dtype="void")', "R.matmul(x, gv, out_dtype=None)"),
    ('R.matmul(x, R.permute_dims(x), out_dtype="")', "R.matmul(x, gv, out_dtype=None)"),
    ("R.nn.conv2d(R.reshape(x, (1, 1, 2, 3)), R.reshape(x, (6, 1, 1, 1)), padding=[1, 1])",
     "R.nn.conv2d(gv, gv1, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, "
     'data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)'),
    ('R.call_dps_packed("f", (x,), out_sinfo=R.Tensor((2, 3), "float32"))',
     'R.call_dps_packed("f", (x,), out_ty=R.Tensor((2, 3), dtype="float32"))'),
    ("R.nn.softmax(x, axis=-1)", "R.nn.softmax(x, axis=-1)"),
])
def test_expression_spellings(expr: str, printed: str):
    text = print_module(parse_module(_one_binding(expr)))
    assert f"= {printed}\n" in text + "\n"


def test_legacy_string_dims_with_body_declaration():
    text = """\
@R.function
def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
    n = T.int64()
    y: R.Tensor((n, 4), dtype="float32") = R.nn.relu(x)
    return y
"""
    func = parse_module(text)["main"]
    n = func.params[0].struct_info.shape[0]
    assert func.ret_struct_info.shape[0] is n
    assert func.body.blocks[0].bindings[0].var.struct_info.shape[0] is n


def test_legacy_metadata_key_and_sinfo_args():
    text = """\
@R.function(pure=False)
def main(x: R.Tensor((4,), dtype="float32")):
    y: R.Tensor((4,), dtype="float32") = R.add(x, metadata["relax.expr.Constant"][0])
    z: R.Tensor((4,), dtype="float32") = R.call_packed("f", y, sinfo_args=(R.Tensor((4,), dtype="float32"),))
    return z
"""
    mod = parse_module(text)
    out = print_module(mod)
    assert 'R.add(x, metadata["ir.GenericConst"][0])' in out
    assert 'R.call_packed("f", y, ty_args=(R.Tensor((4,), dtype="float32"),))' in out


def test_type_aliases():
    text = _one_binding("x", params='x: R.Tensor("float32", ndim=2), o: R.Object, p: R.Prim("int64"), '
                        't: R.Tuple([R.Tensor(None, "int8", ndim=1)]), e: R.Tuple(), '
                        'c: R.Callable((R.Tensor,), R.Tensor, False)')
    out = print_module(parse_module(text))
    assert ('def main(x: R.Tensor(dtype="float32", ndim=2), o: R.Any, p: T.int64, '
            't: R.Tuple(R.Tensor(dtype="int8", ndim=1)), e: R.Tuple, '
            'c: R.Callable((R.Tensor,), R.Tensor, False)) -> R.Tensor(dtype="float32", ndim=2):') in out


def test_tensor_shaped_by_a_shape_variable():
    # spec/textual-ir.md section 3: R.Tensor(s, dtype=...) with s a parameter of Shape type
    text = ('@R.function\ndef main(s: R.Shape(ndim=2), x: R.Tensor(s, dtype="float32")) '
            '-> R.Tensor(s, dtype="float32"):\n    return x\n')
    mod = parse_module(text)
    s, x = mod["main"].params
    assert x.struct_info.shape_var is s and x.struct_info.ndim == 2
    assert 'def main(s: R.Shape(ndim=2), x: R.Tensor(s, dtype="float32")) -> R.Tensor(s, dtype="float32"):' \
        in print_module(mod)


def test_return_bare_tuple_and_missing_annotations_are_inferred():
    text = """\
@R.function
def main(x: R.Tensor((2, 3), dtype="float32")):
    a = R.add(x, x)
    b = R.sum(a, axis=[1], keepdims=False)
    return a, b
"""
    func = parse_module(text)["main"]
    assert func.body.body.fields[1].struct_info == TensorStructInfo((2,), "float32")
    assert print_module(parse_module(text)).endswith("        return (a, b)")


def test_explicit_annotation_wins_over_inference():
    func = parse_module(_one_binding("R.add(x, x)", ann=": R.Tensor(dtype=\"float32\")"))["main"]
    assert func.body.blocks[0].bindings[0].var.struct_info == TensorStructInfo(None, "float32")


def test_strings_decode_hex_escapes_as_utf8():
    text = _one_binding("x").replace("    y = x", '    R.func_attr({"name": "caf\\xC3\\xA9"})\n    y = x')
    func = parse_module(text)["main"]
    assert func.attrs["name"] == "café"
    assert 'R.func_attr({"name": "caf\\xC3\\xA9"})' in print_module(parse_module(text))


def test_temporary_bindings_for_nested_calls_are_dataflow_local_in_a_block():
    text = """\
@R.function
def main(x: R.Tensor((2, 3), dtype="float32")):
    with R.dataflow():
        y = R.add(R.multiply(x, x), x)
        R.output(y)
    return y
"""
    (block,) = parse_module(text)["main"].body.blocks
    tmp, y = block.bindings
    assert isinstance(tmp.var, DataflowVar) and tmp.value.op.name == "relax.multiply"
    assert y.value.args[0] is tmp.var


def test_docstrings_are_ignored_and_triple_quoted_strings_keep_positions():
    text = '''\
"""A module file."""
@I.ir_module
class Net:
    """The module."""

    @R.function
    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        \'\'\'Two
        lines.\'\'\'
        R.func_attr({"Composite": """a.b"""})
        return y
'''
    with pytest.raises(Exception, match=r"<string>:11:16: undefined variable 'y'"):
        parse_module(text)
    func = parse_module(text.replace("return y", "return x"))["main"]
    assert func.attrs == {"Composite": "a.b", "global_symbol": "main"}
    assert len(func.body.blocks) == 0
