"""``if``/``else`` in Relax scripts (TVM's relax.If): each branch ends by binding the same
name, whose last binding becomes ``NAME_then`` / ``NAME_else``; the text prints back as
TVM 0.27 prints it (the expected texts here are TVM's output for the same scripts)."""

from __future__ import annotations

import pytest

from byocc.ir import If
from byocc.ir import ParseError
from byocc.ir import SeqExpr
from byocc.script import from_source
from byocc.text import print_function

HEAD = '@R.function\ndef main(x: R.Tensor((2, 3), "float32"), c: R.Tensor((), "bool")):\n'
SIG = ('def main(x: R.Tensor((2, 3), dtype="float32"), c: R.Tensor((), dtype="bool")) -> '
       'R.Tensor((2, 3), dtype="float32"):\n')
T = 'R.Tensor((2, 3), dtype="float32")'


def body_text(src: str) -> str:
    text = print_function(from_source(HEAD + src))
    return text[text.index("def main"):]


def test_each_branch_ends_with_the_renamed_binding() -> None:
    src = ("    if c:\n        y = R.add(x, x)\n        z = R.multiply(y, y)\n"
           "    else:\n        z = R.subtract(x, x)\n    return z\n")
    assert body_text(src) == SIG + (
        f"    if c:\n        y: {T} = R.add(x, x)\n        z_then: {T} = R.multiply(y, y)\n        z: {T} = z_then\n"
        f"    else:\n        z_else: {T} = R.subtract(x, x)\n        z: {T} = z_else\n    return z")


def test_the_if_is_one_binding_of_an_if_expression() -> None:
    f = from_source(HEAD + "    if c:\n        z = R.add(x, x)\n    else:\n        z = x\n    return z\n")
    (binding,) = f.body.blocks[0].bindings
    assert binding.var.name_hint == "z" and isinstance(binding.value, If)
    assert isinstance(binding.value.true_branch, SeqExpr)
    assert binding.value.true_branch.body.name_hint == "z_then"
    assert binding.value.false_branch.blocks == () and binding.value.false_branch.body is f.params[0]


def test_nested_if_and_numbering_of_temporaries() -> None:
    src = ("    a = R.add(x, R.multiply(x, x))\n    if R.greater(c, c):\n        if c:\n            z = R.add(x, x)\n"
           "        else:\n            z = x\n    else:\n        z = R.add(x, R.multiply(x, x))\n"
           "    b = R.add(z, R.multiply(z, z))\n    return b\n")
    assert body_text(src) == SIG + "\n".join([
        f"    gv: {T} = R.multiply(x, x)",
        f"    a: {T} = R.add(x, gv)",
        '    gv7: R.Tensor((), dtype="bool") = R.greater(c, c)',
        "    if gv7:",
        "        if c:",
        f"            z_then_1: {T} = R.add(x, x)",
        f"            z_then: {T} = z_then_1",
        "        else:",
        f"            z_then: {T} = x",
        f"        z: {T} = z_then",
        "    else:",
        f"        gv5: {T} = R.multiply(x, x)",
        f"        z_else: {T} = R.add(x, gv5)",
        f"        z: {T} = z_else",
        f"    gv9: {T} = R.multiply(z, z)",
        f"    b: {T} = R.add(z, gv9)",
        "    return b"])


def test_branches_with_dataflow_blocks() -> None:
    src = ("    if c:\n        with R.dataflow():\n            w = R.permute_dims(x)\n            out = R.matmul(w, x)\n"
           "            R.output(out)\n    else:\n        with R.dataflow():\n"
           "            out = R.matmul(R.permute_dims(x), x)\n            R.output(out)\n    return out\n")
    t33 = 'R.Tensor((3, 3), dtype="float32")'
    t32 = 'R.Tensor((3, 2), dtype="float32")'
    assert body_text(src) == SIG.replace(T + ":", t33 + ":") + "\n".join([
        "    if c:",
        "        with R.dataflow():",
        f"            w: {t32} = R.permute_dims(x, axes=None)",
        f"            out_then: {t33} = R.matmul(w, x, out_dtype=None)",
        "            R.output(out_then)",
        f"        out: {t33} = out_then",
        "    else:",
        "        with R.dataflow():",
        f"            lv2: {t32} = R.permute_dims(x, axes=None)",
        f"            out_else: {t33} = R.matmul(lv2, x, out_dtype=None)",
        "            R.output(out_else)",
        f"        out: {t33} = out_else",
        "    return out"])


def test_the_value_is_typed_by_what_both_branches_have() -> None:
    src = ("    if c:\n        z = R.match_cast(x, R.Tensor((2, 3), \"float32\"))\n    else:\n"
           "        z = R.const(1.0)\n    return z\n")
    assert body_text(src) == SIG.replace(T + ":", 'R.Tensor(dtype="float32"):') + "\n".join([
        "    if c:",
        f"        z_then: {T} = R.match_cast(x, {T})",
        '        z: R.Tensor(dtype="float32") = z_then',
        "    else:",
        '        z: R.Tensor(dtype="float32") = R.const(1.0, "float32")',
        "    return z"])
    src = "    if c:\n        z = (x, x)\n    else:\n        z = R.shape([2, 3])\n    return z\n"
    assert body_text(src) == SIG.replace(T + ":", "R.Any:") + (
        "    if c:\n        z: R.Any = x, x\n    else:\n        z: R.Any = R.shape([2, 3])\n    return z")


@pytest.mark.parametrize(("src", "where", "message"), [
    ("    if c:\n        z = x\n    else:\n        q = x\n    return x\n", (3, 5),
     "both branches of if/else must end by binding the same variable: the 'if' branch binds 'z', the 'else' branch 'q'"),
    ("    if c:\n        return x\n    else:\n        return x\n", (4, 9), "return inside if/else is not supported"),
    ("    with R.dataflow():\n        if c:\n            z = x\n        else:\n            z = x\n        R.output(z)\n"
     "    return z\n", (4, 9), "if/else cannot be inside a dataflow block"),
    ("    if c:\n        with R.dataflow():\n            z = R.add(x, x)\n            y = R.add(z, z)\n"
     "            R.output(z)\n    else:\n        y = x\n    return y\n", (4, 9),
     "the 'if' branch ends with 'y', which its dataflow block does not output"),
    ("    if c:\n        z = x\n    else:\n        z = x\n    return y\n", (7, 12), "undefined variable 'y'"),
    ("    if c:\n        y = R.add(x, x)\n        z = y\n    else:\n        z = x\n    return y\n", (8, 12),
     "undefined variable 'y'"),
])
def test_errors_are_located(src: str, where: tuple[int, int], message: str) -> None:
    with pytest.raises(ParseError) as info:
        from_source(HEAD + src)
    err = info.value
    errs = getattr(err, "errors", None) or [err]
    assert message in errs[0].message
    assert (errs[0].span.line, errs[0].span.column) == where


def test_a_comparison_of_dimensions_is_a_prim_value_condition() -> None:
    from byocc.ir import PrimBinary
    from byocc.ir import PrimValue

    src = ('@R.function\ndef main(state: R.Tensor(["N"], dtype="float32"), A: R.Tensor(["M", 16], dtype="float32")):\n'
           "    N = T.int64()\n    M = T.int64()\n    if N == 16:\n        w = R.add(A, A)\n    else:\n        w = A\n"
           "    return w\n")
    f = from_source(src)
    cond = f.body.blocks[0].bindings[0].value.cond
    assert isinstance(cond, PrimValue) and cond.dtype == "bool"
    assert isinstance(cond.value, PrimBinary) and cond.value.op == "=="
    text = print_function(f)
    t = 'R.Tensor((M, 16), dtype="float32")'
    assert text.split("\n")[-6:] == [
        "    if N == 16:", f"        w_then: {t} = R.add(A, A)", f"        w: {t} = w_then", "    else:",
        f"        w: {t} = A", "    return w"]
    assert print_function(from_source(text)) == text
