"""``R.print`` and ``R.assert_op`` in scripts and text (TVM's impure builtins): the format
string is the call's operand (first for print, after the condition for assert_op), printed
last as ``format=R.str(...)``; the call is impure and typed as void, so a binding of it
prints as a bare statement. Expected texts are what TVM 0.27 prints for the same input."""

from __future__ import annotations

from byocc.ir import Op
from byocc.ir import StringImm
from byocc.ir import TupleStructInfo
from byocc.ir.analysis import is_impure_call
from byocc.ir.well_formed import well_formed
from byocc.script import from_source
from byocc.text import print_function

HEAD = '@R.function(pure=False)\ndef main(x: R.Tensor((2, 4), "float32")):\n'
SIG = '@R.function(pure=False)\ndef main(x: R.Tensor((2, 4), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):\n'


def printed(body: str) -> str:
    text = print_function(from_source(HEAD + body + "    return x\n"))
    return text[text.index("@R.function"):]


def test_print_takes_the_format_as_first_operand() -> None:
    f = from_source(HEAD + "    R.print(x, x, format='a {} {}')\n    return x\n")
    call = f.body.blocks[0].bindings[0].value
    assert call.op is Op.get("relax.print")
    assert isinstance(call.args[0], StringImm) and call.args[0].value == "a {} {}"
    assert call.args[1:] == (f.params[0], f.params[0])
    assert call.struct_info == TupleStructInfo(())
    assert is_impure_call(call)


def test_printed_forms() -> None:
    assert printed("    R.print(x, x, format='a {} {}')\n") == SIG + '    R.print(x, x, format=R.str("a {} {}"))\n    return x'
    assert printed("    _ = R.print(format='hi')\n") == SIG + '    R.print(format=R.str("hi"))\n    return x'
    assert printed("    y = R.print(x)\n") == SIG + '    R.print(x, format=R.str(""))\n    return x'
    assert printed("    R.assert_op(R.const(True), [x, x], format='bad {} {}')\n") == (
        SIG + '    R.assert_op(R.const(True, "bool"), x, x, format=R.str("bad {} {}"))\n    return x')
    assert printed("    R.assert_op(R.const(True), x)\n") == (
        SIG + '    R.assert_op(R.const(True, "bool"), x, format=R.str(""))\n    return x')


def test_printed_text_reads_back() -> None:
    text = printed("    R.print(x, format='v {}')\n    R.assert_op(R.const(True), x, format='bad')\n")
    assert printed_of(from_source(text)) == text


def printed_of(f) -> str:
    text = print_function(f)
    return text[text.index("@R.function"):]


def test_a_pure_function_may_not_print() -> None:
    f = from_source(HEAD.replace("(pure=False)", "") + "    R.print(x)\n    return x\n")
    (problem,) = well_formed(f)
    assert "is annotated as pure but contains an impure call" in problem.message
    assert well_formed(from_source(HEAD + "    R.print(x)\n    return x\n")) == []
