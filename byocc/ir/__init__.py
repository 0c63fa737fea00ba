"""byocc.ir: IR nodes, struct info, module, visitors, analyses."""

from . import arith
from . import base
from .arith import simplify_binary
from .base import assert_structural_equal
from .diagnostics import ByoccError
from .diagnostics import ExternalToolError
from .diagnostics import FrontendError
from .diagnostics import InputError
from .diagnostics import InternalError
from .diagnostics import InterpretError
from .diagnostics import MultipleErrors
from .diagnostics import ParseError
from .diagnostics import PassError
from .diagnostics import PathError
from .diagnostics import PatternError
from .diagnostics import Span
from .diagnostics import TypeInferenceError
from .diagnostics import UnsupportedError
from .diagnostics import WellFormedError
from .expr import Attrs
from .expr import Binding
from .expr import BindingBlock
from .expr import Call
from .expr import Constant
from .expr import DataflowBlock
from .expr import DataflowVar
from .expr import DataTypeImm
from .expr import Expr
from .expr import ExternFunc
from .expr import Function
from .expr import GlobalVar
from .expr import If
from .expr import MatchCast
from .expr import Op
from .expr import PrimValue
from .expr import SeqExpr
from .expr import ShapeExpr
from .expr import StringImm
from .expr import Tuple
from .expr import TupleGetItem
from .expr import Var
from .expr import VarBinding
from .expr import is_leaf
from .expr import sinfo_of
from .functor import ExprMutator
from .functor import ExprVisitor
from .module import IRModule
from .name_supply import NameSupply
from .prim import Dim
from .prim import PrimBinary
from .prim import PrimExpr
from .prim import PrimMinMax
from .prim import TirVar
from .prim import dim_vars
from .prim import substitute_dim
from .struct_info import EMPTY_TUPLE
from .struct_info import FuncStructInfo
from .struct_info import ObjectStructInfo
from .struct_info import PrimStructInfo
from .struct_info import ShapeStructInfo
from .struct_info import StructInfo
from .struct_info import TensorStructInfo
from .struct_info import TupleStructInfo
from .struct_info import struct_info_vars
from .struct_info import tensor
from .structural import canonical_form
from .structural import structural_equal
from .structural import structural_hash

__all__ = [
    "Attrs", "Binding", "BindingBlock", "ByoccError", "Call", "Constant", "DataTypeImm",
    "DataflowBlock", "DataflowVar", "Dim", "EMPTY_TUPLE", "Expr", "ExprMutator", "ExprVisitor",
    "ExternFunc", "ExternalToolError", "FrontendError", "InterpretError", "FuncStructInfo", "Function", "GlobalVar", "IRModule", "If",
    "InputError", "InternalError", "MatchCast", "MultipleErrors", "NameSupply", "ObjectStructInfo",
    "Op", "ParseError", "PassError", "PathError", "PatternError", "PrimBinary", "PrimExpr", "PrimMinMax",
    "PrimStructInfo", "PrimValue", "SeqExpr", "ShapeExpr", "ShapeStructInfo", "Span", "StringImm",
    "StructInfo", "TensorStructInfo", "TirVar", "Tuple", "TupleGetItem", "TupleStructInfo",
    "TypeInferenceError", "UnsupportedError", "Var", "VarBinding", "WellFormedError", "dim_vars",
    "arith", "assert_structural_equal", "base", "canonical_form", "is_leaf", "sinfo_of", "simplify_binary", "struct_info_vars", "structural_equal",
    "structural_hash", "substitute_dim", "tensor",
]
