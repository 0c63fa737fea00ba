"""byocc.relax: TVM's ``tvm.relax`` Python API over byocc's own IR and passes.

A script written for TVM runs with only its imports changed::

    from byocc import relax            # was: import tvm; from tvm import relax
    from byocc.relax.dpl.pattern import is_op, wildcard

    x = relax.Var("x", relax.TensorStructInfo([10, 10], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        ...
    mod = relax.transform.CanonicalizeBindings()(bb.get())
    mod.show()

This package is a facade (a top layer, like the CLI): it holds no IR or pass logic of its
own. Importing it loads only :mod:`byocc.ir`; ``op``, ``transform``, ``analysis``,
``dpl`` and ``backend`` load on first use. See docs/api.md.
"""

from __future__ import annotations

import importlib
from typing import Any

from byocc.ir import Constant
from byocc.ir import Expr
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import StructInfo
from byocc.ir.expr import set_operator_builder

from .block_builder import BlockBuilder
from .expr import BindingBlock
from .expr import Call
from .expr import DataflowBlock
from .expr import DataflowVar
from .expr import ExternFunc
from .expr import Function
from .expr import MatchCast
from .expr import PrimValue
from .expr import SeqExpr
from .expr import ShapeExpr
from .expr import StringImm
from .expr import Tuple
from .expr import TupleGetItem
from .expr import Var
from .expr import VarBinding
from .expr import const
from .expr import extern
from .expr import get_shape_of
from .expr import prim_value
from .struct_info import FuncStructInfo
from .struct_info import FuncType
from .struct_info import ObjectStructInfo
from .struct_info import ObjectType
from .struct_info import PrimStructInfo
from .struct_info import PrimType
from .struct_info import ShapeStructInfo
from .struct_info import ShapeType
from .struct_info import TensorStructInfo
from .struct_info import TensorType
from .struct_info import TupleStructInfo
from .struct_info import TupleType

_SUBMODULES = ("analysis", "backend", "dpl", "op", "transform")


def _build_operator(name: str, args: tuple[Expr, ...], attrs: dict[str, Any] | None) -> Expr:
    """What ``x + y``, ``-x``, ``x.astype(dtype)`` on expressions build: a typed call of
    ``relax.<name>`` (the op registry loads on first use)."""
    from byocc.ops import make_call

    return make_call(name, args, attrs)


set_operator_builder(_build_operator)

__all__ = [
    "BindingBlock",
    "BlockBuilder",
    "Call",
    "Constant",
    "DataflowBlock",
    "DataflowVar",
    "Expr",
    "ExternFunc",
    "FuncStructInfo",
    "FuncType",
    "Function",
    "GlobalVar",
    "IRModule",
    "MatchCast",
    "ObjectStructInfo",
    "ObjectType",
    "Op",
    "PrimStructInfo",
    "PrimType",
    "PrimValue",
    "SeqExpr",
    "ShapeExpr",
    "ShapeStructInfo",
    "ShapeType",
    "StringImm",
    "StructInfo",
    "TensorStructInfo",
    "TensorType",
    "Tuple",
    "TupleGetItem",
    "TupleStructInfo",
    "TupleType",
    "Var",
    "VarBinding",
    "analysis",
    "backend",
    "call_dps_packed",
    "call_pure_packed",
    "call_tir",
    "const",
    "dpl",
    "extern",
    "get_shape_of",
    "op",
    "prim_value",
    "transform",
]

_OP_SHORTCUTS = ("call_tir", "call_dps_packed", "call_pure_packed")  # relax.call_tir is relax.op.call_tir


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    if name in _OP_SHORTCUTS:
        value = getattr(importlib.import_module(f"{__name__}.op"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
