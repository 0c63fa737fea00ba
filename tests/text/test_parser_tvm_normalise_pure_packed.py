"""R.call_pure_packed as TVM 0.27 represents it: a call of the pure operator
``relax.call_pure_packed`` whose first argument is the ExternFunc (R.call_packed, by contrast,
calls the ExternFunc itself and is impure). TVM outputs used here come from the oracle."""

import numpy as np

from byocc.ir import Call
from byocc.ir import ExternFunc
from byocc.ir import Op
from byocc.ir import TensorStructInfo
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir.analysis import contains_impure_call
from byocc.ir.analysis import find_impure_call
from byocc.script import from_source
from byocc.transform import dead_code_elimination

HEAD = '''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
'''
T23 = 'R.Tensor((2, 3), dtype="float32")'


def _module(body: str, pure: bool = True):
    deco = "@R.function" if pure else "@R.function(pure=False)"
    return from_source(HEAD + f"    {deco}\n    def main(x: {T23}):\n" + body)


def _value(mod, i: int = 0):
    return mod["main"].body.blocks[0].bindings[i].value


def test_parsed_as_the_pure_operator_with_the_extern_func_first():
    mod = _module(f'        y = R.call_pure_packed("f", x, ty_args={T23})\n        return y\n')
    call = _value(mod)
    assert isinstance(call, Call) and call.op is Op.get("relax.call_pure_packed")
    assert isinstance(call.args[0], ExternFunc) and call.args[0].global_symbol == "f"
    assert isinstance(call.args[1], Var) and call.args[1].name_hint == "x"
    assert call.sinfo_args == (TensorStructInfo((2, 3), "float32"),)
    assert call.struct_info == TensorStructInfo((2, 3), "float32")


def test_several_ty_args_give_a_tuple_and_print_as_tvm():
    mod = _module(f'        y = R.call_pure_packed("f", x, ty_args=[{T23}, {T23}])\n        return y\n')
    assert isinstance(_value(mod).struct_info, TupleStructInfo)
    assert (f'y: R.Tuple({T23}, {T23}) = R.call_pure_packed("f", x, ty_args=({T23}, {T23}))'
            in mod.script())


def test_pure_for_the_purity_analysis_unlike_call_packed():
    pure = _module(f'        y = R.call_pure_packed("f", x, ty_args={T23})\n        return y\n')
    assert not contains_impure_call(pure["main"])
    assert find_impure_call(pure["main"]) is None
    mixed = _module(f'        y = R.call_pure_packed("f", x, ty_args={T23})\n'
                    f'        z = R.call_packed("g", y, ty_args={T23})\n        return z\n', pure=False)
    found = find_impure_call(mixed["main"])
    assert isinstance(found, Call) and isinstance(found.op, ExternFunc) and found.op.global_symbol == "g"
    assert 'R.call_packed("g", y, ty_args=' in mixed.script()


def test_legacy_sinfo_args_spelling_reads_as_ty_args():
    mod = _module(f'        y = R.call_pure_packed("f", x, sinfo_args={T23})\n        return y\n')
    assert f'y: {T23} = R.call_pure_packed("f", x, ty_args=({T23},))' in mod.script()


def test_python_constructor_builds_the_same_call():
    from byocc import relax

    x = Var("x", TensorStructInfo((2, 3), "float32"))
    call = relax.op.call_pure_packed("f", x, ty_args=TensorStructInfo((2, 3), "float32"))
    assert call.op is Op.get("relax.call_pure_packed")
    assert isinstance(call.args[0], ExternFunc) and call.args[1] is x
    assert not contains_impure_call(call)


def test_unused_pure_packed_call_is_dead_code():
    # TVM 0.27 DeadCodeElimination drops the unused pure call `a` and keeps `b`
    mod = from_source(HEAD + f'''    @R.function
    def main(x: {T23}) -> {T23}:
        with R.dataflow():
            a = R.call_pure_packed("f", x, ty_args={T23})
            b = R.call_pure_packed("f", x, ty_args={T23})
            c = R.add(b, x)
            R.output(c)
        return c
''')
    text = dead_code_elimination(mod).script()
    assert "a: " not in text
    assert f'b: {T23} = R.call_pure_packed("f", x, ty_args=({T23},))' in text


def test_round_trip_keeps_the_call():
    mod = _module(f'        y = R.call_pure_packed("f", x, R.shape([2, 3]), ty_args={T23})\n        return y\n')
    text = mod.script()
    again = from_source(text)
    assert again.script() == text
    assert _value(again).op is Op.get("relax.call_pure_packed")
    assert np.asarray(_value(again).args[2].values).tolist() == [2, 3]


def test_interpreter_runs_it_through_the_packed_table():
    from byocc.runtime import run_module

    mod = _module(f'        y = R.call_pure_packed("f", x, ty_args={T23})\n        return y\n')
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = run_module(mod, [x], packed={"f": lambda a: a * 2 + 1})
    np.testing.assert_array_equal(out, x * 2 + 1)


def test_show_summary_counts_it_as_a_packed_call():
    from byocc.cli.summary import summarize

    mod = _module(f'        y = R.call_pure_packed("f", x, ty_args={T23})\n        return y\n')
    assert summarize(mod).packed_calls["f"] == 1
