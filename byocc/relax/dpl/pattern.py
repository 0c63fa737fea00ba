"""``relax.dpl.pattern``: TVM's ``tvm.relax.dpl.pattern`` names, from :mod:`byocc.dpl`.

``make_fused_bias_activation_pattern`` here returns one pattern, as TVM's does in this
module; ``relax.backend.patterns`` has the version returning ``(pattern, annotations)``.
"""

from __future__ import annotations

from byocc.dpl import AndPattern
from byocc.dpl import AttrPattern
from byocc.dpl import CallPattern
from byocc.dpl import ConstantPattern
from byocc.dpl import DataflowVarPattern
from byocc.dpl import DataTypePattern
from byocc.dpl import DFPattern
from byocc.dpl import ExprPattern
from byocc.dpl import ExternFuncPattern
from byocc.dpl import FunctionPattern
from byocc.dpl import GlobalVarPattern
from byocc.dpl import NotPattern
from byocc.dpl import OrPattern
from byocc.dpl import PatternSeq
from byocc.dpl import PrimArrPattern
from byocc.dpl import SameShapeConstraint
from byocc.dpl import ShapePattern
from byocc.dpl import StructInfoPattern
from byocc.dpl import TupleGetItemPattern
from byocc.dpl import TuplePattern
from byocc.dpl import TypePattern
from byocc.dpl import UnorderedTuplePattern
from byocc.dpl import VarPattern
from byocc.dpl import WildcardPattern
from byocc.dpl import has_attr
from byocc.dpl import has_dtype
from byocc.dpl import has_shape
from byocc.dpl import is_call_dps_packed
from byocc.dpl import is_call_packed
from byocc.dpl import is_call_tir
from byocc.dpl import is_const
from byocc.dpl import is_dfv
from byocc.dpl import is_expr
from byocc.dpl import is_gv
from byocc.dpl import is_op
from byocc.dpl import is_shape
from byocc.dpl import is_tuple
from byocc.dpl import is_tuple_get_item
from byocc.dpl import is_var
from byocc.dpl import make_fused_bias_activation_pattern
from byocc.dpl import reject
from byocc.dpl import wildcard

__all__ = [
    "AndPattern", "AttrPattern", "CallPattern", "ConstantPattern", "DFPattern", "DataTypePattern",
    "DataflowVarPattern", "ExprPattern", "ExternFuncPattern", "FunctionPattern", "GlobalVarPattern", "NotPattern",
    "OrPattern", "PatternSeq", "PrimArrPattern", "SameShapeConstraint", "ShapePattern",
    "StructInfoPattern", "TupleGetItemPattern", "TuplePattern", "TypePattern",
    "UnorderedTuplePattern", "VarPattern", "WildcardPattern", "has_attr", "has_dtype", "has_shape",
    "is_call_dps_packed", "is_call_packed", "is_call_tir", "is_const", "is_dfv", "is_expr", "is_gv",
    "is_op", "is_shape", "is_tuple", "is_tuple_get_item", "is_var",
    "make_fused_bias_activation_pattern", "reject", "wildcard",
]
