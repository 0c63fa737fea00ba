"""Calls into other code: call_tir, call_dps_packed, call_packed, call_pure_packed, and
``R.builtin.alloc_tensor`` (TVM's op/op.cc and builtin)."""

from __future__ import annotations

from byocc.ir import Attrs
from byocc.ir import Call
from byocc.ir import DataTypeImm
from byocc.ir import ExternFunc
from byocc.ir import FuncStructInfo
from byocc.ir import GlobalVar
from byocc.ir import Op
from byocc.ir import ShapeStructInfo
from byocc.ir import StructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TupleStructInfo
from byocc.ir import TypeInferenceError

from .common import check_num_args
from .common import fail
from .common import fmt_sinfo
from .common import sinfo_of
from .common import tensor_from_shape_expr
from .registry import AttrField
from .registry import _sinfo_list
from .registry import define
from .registry import packed_result


def infer_dps(call: Call):
    """call_tir / call_dps_packed: the result is ``out_ty`` (sinfo_args[0])."""
    check_num_args(call, (2, 3))
    if len(call.sinfo_args) != 1:
        fail(call, f"expects exactly one output type (out_ty), but got {len(call.sinfo_args)}")
    if call.op.name == "relax.call_tir" and not isinstance(call.args[0], GlobalVar):
        fail(call, "expects the first argument to be a global function (cls.NAME)")
    args = sinfo_of(call.args[1])
    if not isinstance(args, TupleStructInfo):
        fail(call, f"expects its arguments as a tuple, but got {fmt_sinfo(args)}")
    out = call.sinfo_args[0]
    fields = out.fields if isinstance(out, TupleStructInfo) else (out,)
    for f in fields:
        if not isinstance(f, TensorStructInfo):
            fail(call, f"expects out_ty to be tensor types, but got {fmt_sinfo(f)}")
    return out


DPS_KINDS = {"args": "tuple", "tir_vars": "shape"}
define("relax.call_tir", args=("gvar", "args", "tir_vars"), params=("gvar", "args", "out_ty", "tir_vars"),
       arg_kinds=dict(DPS_KINDS, gvar="any"), arg_defaults={"tir_vars": None}, sinfo_key="out_ty",
       infer=infer_dps)
define("relax.call_dps_packed", args=("func", "args"), params=("func", "args", "out_ty"),
       arg_kinds=dict(DPS_KINDS, func="extern"), sinfo_key="out_ty", infer=infer_dps)


def _packed_parts(opdef, args, attrs, sinfo_args, span):
    """The callee (an ExternFunc), its operands and the ``ty_args`` of a packed call."""
    if not args:
        raise TypeInferenceError(f"{opdef.printed} needs the packed function's name", span)
    func = args[0]
    if isinstance(func, str):
        func = ExternFunc(func)
    extra = dict(attrs.items()) if isinstance(attrs, Attrs) else dict(attrs or {})
    if "ty_args" in extra:
        sinfo_args = _sinfo_list(extra.pop("ty_args"), opdef, span)
    if extra:
        raise TypeInferenceError(f"{opdef.printed} got unexpected keyword arguments {sorted(extra)}", span)
    for s in sinfo_args:
        if not isinstance(s, StructInfo):
            raise TypeInferenceError(f"{opdef.printed}: ty_args must be types", span)
    return func, tuple(args[1:]), tuple(sinfo_args)


def _build_packed(opdef, args, attrs, sinfo_args, span):
    """``R.call_packed("sym", *args, ty_args=...)`` is a Call whose callee is the
    ExternFunc itself (no operator), as in TVM; such a call is impure."""
    func, operands, sinfo_args = _packed_parts(opdef, args, attrs, sinfo_args, span)
    call = Call(func, operands, None, sinfo_args, None, span)
    return Call(call.op, call.args, None, call.sinfo_args, packed_result(call), span)


def _build_pure_packed(opdef, args, attrs, sinfo_args, span):
    """``R.call_pure_packed("sym", *args, ty_args=...)`` is a call of the operator
    ``relax.call_pure_packed`` whose first operand is the ExternFunc, as in TVM; the
    operator is pure, so the call is too. TVM's parser requires ``ty_args`` but prints none
    when it is empty; byocc reads a missing ``ty_args`` as empty, so that output reads back."""
    func, operands, sinfo_args = _packed_parts(opdef, args, attrs, sinfo_args, span)
    if not isinstance(func, ExternFunc):
        raise TypeInferenceError(f"{opdef.printed} takes the packed function's name as a string", span)
    call = Call(Op.get(opdef.name), (func,) + operands, None, sinfo_args, None, span)
    return Call(call.op, call.args, None, call.sinfo_args, infer_pure_packed(call), span)


def infer_pure_packed(call: Call) -> StructInfo:
    """call_pure_packed: the type the callee's call would have (TVM's
    InferStructInfoCallPurePacked): for an ExternFunc, decided by ``ty_args``."""
    if not call.args:
        fail(call, "must be called with at least one argument (the packed function)")
    callee = call.args[0]
    if isinstance(callee, ExternFunc):
        return packed_result(call)
    fsi = sinfo_of(callee)
    if not isinstance(fsi, FuncStructInfo) or fsi.params is not None:
        fail(call, f"must be called with an opaque function, but got {fmt_sinfo(fsi)}")
    return fsi.ret


define("relax.call_packed", args=("func",), params=("func", "ty_args"), arg_kinds={"func": "extern"},
       varargs=True, sinfo_key="ty_args", build=_build_packed, infer=packed_result)
define("relax.call_pure_packed", args=("func",), params=("func", "ty_args"), arg_kinds={"func": "extern"},
       varargs=True, sinfo_key="ty_args", build=_build_pure_packed, infer=infer_pure_packed)


def infer_alloc_tensor(call: Call):
    check_num_args(call, (3, 4))
    shape = sinfo_of(call.args[0])
    if not isinstance(shape, ShapeStructInfo):
        fail(call, f"expects a shape as its first argument, but got {fmt_sinfo(shape)}")
    dt = call.args[1]
    if not isinstance(dt, DataTypeImm):
        fail(call, "expects a dtype (R.dtype(...)) as its second argument")
    return tensor_from_shape_expr(call.args[0], dt.value)


define("relax.builtin.alloc_tensor", args=("shape", "dtype", "runtime_device_index", "storage_scope"),
       arg_kinds={"shape": "shape", "dtype": "dtype_imm", "runtime_device_index": "prim",
                  "storage_scope": "str_imm"},
       arg_defaults={"storage_scope": "global"}, infer=infer_alloc_tensor)



# --------------------------------------------------------------------------- impure builtins
VOID = TupleStructInfo(())


def _format_call(opdef, fixed: tuple, values: tuple, attrs, span) -> Call:
    """``R.print(*values, format=...)`` / ``R.assert_op(cond, *values, format=...)``: TVM's
    operands are the fixed ones, the format string (a StringImm), then the values; a list of
    values (``R.assert_op(c, [x, y])``) is spread. Impure (TVM's list), typed as void."""
    from byocc.ir import StringImm
    from byocc.ir import Tuple as TupleExpr

    if attrs is None:  # already in TVM's operand order (a pass rebuilding the call)
        return Call(Op.get(opdef.name), fixed + values, None, (), VOID, span)
    fmt = attrs.get("format", "")
    spread: list = []
    for v in values:
        spread.extend(v.fields if type(v) is TupleExpr else (v,))
    return Call(Op.get(opdef.name), fixed + (StringImm(fmt),) + tuple(spread), None, (), VOID, span)


def _build_print(opdef, args, attrs, sinfo_args, span):
    return _format_call(opdef, (), tuple(args), attrs, span)


def _build_assert(opdef, args, attrs, sinfo_args, span):
    if not args:
        raise TypeInferenceError("R.assert_op needs a condition", span)
    return _format_call(opdef, (args[0],), tuple(args[1:]), attrs, span)


def _infer_void(call: Call):
    return VOID


define("relax.print", args=(), attrs=(AttrField("format", "", "str"),), varargs=True,
       build=_build_print, infer=_infer_void,
       doc="Print the values with a format string at run time (impure; void).")
define("relax.assert_op", args=("condition",), attrs=(AttrField("format", "", "str"),), varargs=True,
       arg_kinds={"condition": "any"}, build=_build_assert, infer=_infer_void,
       doc="Fail at run time, with the formatted message, unless the condition holds (impure; void).")
