"""byocc.dpl: the dataflow pattern language (TVM's names), matcher, pattern entries and
the check context. docs/partitioning.md#pattern-language and #pattern-entries-and-the-check-context."""

from byocc.ir.arith import can_prove_equal  # (re-exported: backends' checks)
from byocc.ir.arith import product  # (re-exported: backends' checks)

from .constructors import PatternWithAnnotations
from .constructors import append_bias_activation
from .constructors import has_attr
from .constructors import has_dtype
from .constructors import has_shape
from .constructors import is_call_dps_packed
from .constructors import is_call_packed
from .constructors import is_call_tir
from .constructors import is_const
from .constructors import is_dfv
from .constructors import is_expr
from .constructors import is_gv
from .constructors import is_op
from .constructors import is_shape
from .constructors import is_tuple
from .constructors import is_tuple_get_item
from .constructors import is_var
from .constructors import make_fused_bias_activation_pattern
from .constructors import reject
from .constructors import wildcard
from .context import PatternContext
from .context import match_graph
from .explain import explain_no_match
from .explain import pattern_root_ops
from .fusion import ACCEPT
from .fusion import CheckResult
from .fusion import FusionPattern
from .fusion import PatternCheckContext
from .fusion import VarUsages
from .fusion import as_fusion_pattern
from .fusion import as_fusion_patterns
from .fusion import backend_of
from .fusion import check_reason
from .fusion import fail
from .fusion import make_check_context
from .matcher import Matcher
from .matcher import MatchFailure
from .matcher import expr_equal_same_vars
from .matcher import match_expr
from .matcher import match_with_trace
from .matcher import register_pattern_kind
from .matcher import unwrap_bound
from .pattern import AndPattern
from .pattern import AttrPattern
from .pattern import CallPattern
from .pattern import ConstantPattern
from .pattern import DataflowVarPattern
from .pattern import DataTypePattern
from .pattern import DFPattern
from .pattern import ExprPattern
from .pattern import ExternFuncPattern
from .pattern import FunctionPattern
from .pattern import GlobalVarPattern
from .pattern import NotPattern
from .pattern import OrPattern
from .pattern import PatternSeq
from .pattern import PrimArrPattern
from .pattern import SameShapeConstraint
from .pattern import ShapePattern
from .pattern import StructInfoPattern
from .pattern import TupleGetItemPattern
from .pattern import TuplePattern
from .pattern import TypePattern
from .pattern import UnorderedTuplePattern
from .pattern import VarPattern
from .pattern import WildcardPattern

__all__ = [
    "ACCEPT", "AndPattern", "AttrPattern", "CallPattern", "CheckResult", "ConstantPattern",
    "DFPattern", "DataTypePattern", "DataflowVarPattern", "ExprPattern", "ExternFuncPattern",
    "FunctionPattern", "FusionPattern", "GlobalVarPattern", "MatchFailure", "Matcher", "NotPattern", "OrPattern",
    "PatternCheckContext", "PatternContext", "PatternSeq", "PatternWithAnnotations", "PrimArrPattern", "SameShapeConstraint", "ShapePattern",
    "StructInfoPattern", "TupleGetItemPattern", "TuplePattern", "TypePattern",
    "UnorderedTuplePattern", "VarPattern", "VarUsages", "WildcardPattern", "append_bias_activation",
    "as_fusion_pattern",
    "as_fusion_patterns", "backend_of", "can_prove_equal", "check_reason", "explain_no_match", "expr_equal_same_vars",
    "fail", "has_attr", "has_dtype", "has_shape", "is_call_dps_packed", "is_call_packed",
    "is_call_tir", "is_const", "is_dfv", "is_expr", "is_gv", "is_op", "is_shape", "is_tuple",
    "is_tuple_get_item", "is_var", "make_check_context", "make_fused_bias_activation_pattern", "match_expr", "match_graph",
    "match_with_trace", "pattern_root_ops", "product", "register_pattern_kind", "reject", "unwrap_bound", "wildcard",
]
