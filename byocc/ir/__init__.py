"""byocc.ir: IR nodes, struct info, module, visitors, analyses."""

from . import arith
from .arith import simplify_binary
from .diagnostics import (
    ByoccError,
    ExternalToolError,
    FrontendError,
    InputError,
    InternalError,
    InterpretError,
    MultipleErrors,
    ParseError,
    PassError,
    PatternError,
    Span,
    TypeInferenceError,
    UnsupportedError,
    WellFormedError,
)
from .expr import (
    Attrs,
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    Op,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    is_leaf,
    sinfo_of,
)
from .functor import ExprMutator, ExprVisitor
from .module import IRModule
from .name_supply import NameSupply
from .prim import (
    Dim,
    PrimBinary,
    PrimExpr,
    PrimMinMax,
    TirVar,
    dim_vars,
    substitute_dim,
)
from .struct_info import (
    EMPTY_TUPLE,
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    struct_info_vars,
    tensor,
)
from .structural import canonical_form, structural_equal, structural_hash

__all__ = [
    "Attrs", "Binding", "BindingBlock", "ByoccError", "Call", "Constant", "DataTypeImm",
    "DataflowBlock", "DataflowVar", "Dim", "EMPTY_TUPLE", "Expr", "ExprMutator", "ExprVisitor",
    "ExternFunc", "ExternalToolError", "FrontendError", "InterpretError", "FuncStructInfo", "Function", "GlobalVar", "IRModule", "If",
    "InputError", "InternalError", "MatchCast", "MultipleErrors", "NameSupply", "ObjectStructInfo",
    "Op", "ParseError", "PassError", "PatternError", "PrimBinary", "PrimExpr", "PrimMinMax",
    "PrimStructInfo", "PrimValue", "SeqExpr", "ShapeExpr", "ShapeStructInfo", "Span", "StringImm",
    "StructInfo", "TensorStructInfo", "TirVar", "Tuple", "TupleGetItem", "TupleStructInfo",
    "TypeInferenceError", "UnsupportedError", "Var", "VarBinding", "WellFormedError", "dim_vars",
    "arith", "canonical_form", "is_leaf", "sinfo_of", "simplify_binary", "struct_info_vars", "structural_equal",
    "structural_hash", "substitute_dim", "tensor",
]
