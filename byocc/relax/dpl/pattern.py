"""``relax.dpl.pattern``: TVM's ``tvm.relax.dpl.pattern`` names, from :mod:`byocc.dpl`.

``make_fused_bias_activation_pattern`` here returns one pattern, as TVM's does in this
module; ``relax.backend.patterns`` has the version returning ``(pattern, annotations)``.
"""

from __future__ import annotations

from byocc.dpl import (
    AndPattern,
    AttrPattern,
    CallPattern,
    ConstantPattern,
    DataflowVarPattern,
    DataTypePattern,
    DFPattern,
    ExprPattern,
    ExternFuncPattern,
    GlobalVarPattern,
    NotPattern,
    OrPattern,
    PatternSeq,
    PrimArrPattern,
    SameShapeConstraint,
    ShapePattern,
    StructInfoPattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    UnorderedTuplePattern,
    VarPattern,
    WildcardPattern,
    has_attr,
    has_dtype,
    has_shape,
    is_call_dps_packed,
    is_call_packed,
    is_call_tir,
    is_const,
    is_dfv,
    is_expr,
    is_gv,
    is_op,
    is_shape,
    is_tuple,
    is_tuple_get_item,
    is_var,
    make_fused_bias_activation_pattern,
    reject,
    wildcard,
)

__all__ = [
    "AndPattern", "AttrPattern", "CallPattern", "ConstantPattern", "DFPattern", "DataTypePattern",
    "DataflowVarPattern", "ExprPattern", "ExternFuncPattern", "GlobalVarPattern", "NotPattern",
    "OrPattern", "PatternSeq", "PrimArrPattern", "SameShapeConstraint", "ShapePattern",
    "StructInfoPattern", "TupleGetItemPattern", "TuplePattern", "TypePattern",
    "UnorderedTuplePattern", "VarPattern", "WildcardPattern", "has_attr", "has_dtype", "has_shape",
    "is_call_dps_packed", "is_call_packed", "is_call_tir", "is_const", "is_dfv", "is_expr", "is_gv",
    "is_op", "is_shape", "is_tuple", "is_tuple_get_item", "is_var",
    "make_fused_bias_activation_pattern", "reject", "wildcard",
]
