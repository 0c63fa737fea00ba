"""byocc.dpl: the dataflow pattern language (TVM's names), matcher, pattern entries and
the check context. spec/partitioning.md sections 3 and 4."""

from byocc.ir.arith import can_prove_equal, product  # (re-exported: backends' checks)

from .constructors import (
    PatternWithAnnotations,
    append_bias_activation,
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
from .explain import explain_no_match, pattern_root_ops
from .fusion import (
    ACCEPT,
    CheckResult,
    FusionPattern,
    PatternCheckContext,
    VarUsages,
    as_fusion_pattern,
    as_fusion_patterns,
    backend_of,
    check_reason,
    fail,
    make_check_context,
)
from .matcher import (
    Matcher,
    MatchFailure,
    expr_equal_same_vars,
    match_expr,
    match_with_trace,
    register_pattern_kind,
)
from .pattern import (
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
)

__all__ = [
    "ACCEPT", "AndPattern", "AttrPattern", "CallPattern", "CheckResult", "ConstantPattern",
    "DFPattern", "DataTypePattern", "DataflowVarPattern", "ExprPattern", "ExternFuncPattern",
    "FusionPattern", "GlobalVarPattern", "MatchFailure", "Matcher", "NotPattern", "OrPattern",
    "PatternCheckContext", "PatternSeq", "PatternWithAnnotations", "PrimArrPattern", "SameShapeConstraint", "ShapePattern",
    "StructInfoPattern", "TupleGetItemPattern", "TuplePattern", "TypePattern",
    "UnorderedTuplePattern", "VarPattern", "VarUsages", "WildcardPattern", "append_bias_activation",
    "as_fusion_pattern",
    "as_fusion_patterns", "backend_of", "can_prove_equal", "check_reason", "explain_no_match", "expr_equal_same_vars",
    "fail", "has_attr", "has_dtype", "has_shape", "is_call_dps_packed", "is_call_packed",
    "is_call_tir", "is_const", "is_dfv", "is_expr", "is_gv", "is_op", "is_shape", "is_tuple",
    "is_tuple_get_item", "is_var", "make_check_context", "make_fused_bias_activation_pattern", "match_expr",
    "match_with_trace", "pattern_root_ops", "product", "register_pattern_kind", "reject", "wildcard",
]
