"""byocc.transform: passes, the pass manager and the partitioning pipeline (facade).

Passes (TVM names): CanonicalizeBindings, FuseOpsByPattern, MergeCompositeFunctions,
RunCodegen, DeadCodeElimination; :class:`Sequential` and :class:`PassContext` with the
instruments; :func:`partition` runs one of the two BYOC paths.
"""

from .allocate_workspace import AllocateWorkspace
from .allocate_workspace import allocate_workspace
from .canonicalize_bindings import CanonicalizeBindings
from .canonicalize_bindings import canonicalize_bindings
from .convert_layout import ConvertLayout
from .convert_layout import convert_layout
from .dead_code_elimination import DeadCodeElimination
from .dead_code_elimination import dead_code_elimination
from .eliminate_common_subexpr import EliminateCommonSubexpr
from .eliminate_common_subexpr import eliminate_common_subexpr
from .fold_batch_norm import FoldBatchNorm
from .fold_batch_norm import fold_batch_norm
from .fold_constant import FoldConstant
from .fold_constant import fold_constant
from .fuse_ops_by_pattern import FuseOpsByPattern
from .merge_composite_functions import MergeCompositeFunctions
from .merge_composite_functions import merge_composite_functions
from .pass_manager import DumpIR
from .pass_manager import ModulePass
from .pass_manager import Pass
from .pass_manager import PassContext
from .pass_manager import PassInfo
from .pass_manager import PassInstrument
from .pass_manager import PassTimingInstrument
from .pass_manager import PrintAfterAll
from .pass_manager import PrintBeforeAll
from .pass_manager import Sequential
from .pass_manager import WellFormedInstrument
from .pass_manager import map_functions
from .pass_manager import pass_instrument
from .pipeline import partition
from .pipeline import partition_passes
from .prepare import RewriteFunctions
from .prepare import preparation_passes
from .prepare import prepare_module
from .prepare import rewrite_functions
from .recompose_ops import RecomposeOps
from .recompose_ops import recompose_ops
from .rewrite_call import rewrite_call
from .run_codegen import CodegenFn
from .run_codegen import CodegenLookup
from .run_codegen import CodegenModule
from .run_codegen import RunCodegen
from .run_codegen import call_dps_packed
from .run_codegen import codegen_module
from .run_codegen import find_codegen
from .run_codegen import run_codegen
from .run_codegen import set_codegen_lookup
from .run_codegen import stub_codegen
from .to_mixed_precision import ToMixedPrecision
from .to_mixed_precision import to_mixed_precision

__all__ = [
    "AllocateWorkspace", "allocate_workspace",
    "CanonicalizeBindings", "CodegenFn", "CodegenLookup", "CodegenModule", "EliminateCommonSubexpr", "eliminate_common_subexpr",
    "rewrite_call", "map_functions", "ConvertLayout", "FoldBatchNorm", "FoldConstant",
    "convert_layout", "fold_batch_norm", "fold_constant", "preparation_passes", "prepare_module", "DeadCodeElimination", "DumpIR", "FuseOpsByPattern",
    "MergeCompositeFunctions", "ModulePass", "Pass", "PassContext", "PassInfo", "PassInstrument",
    "PassTimingInstrument", "PrintAfterAll", "PrintBeforeAll", "RewriteFunctions", "RunCodegen", "Sequential",
    "WellFormedInstrument", "call_dps_packed", "canonicalize_bindings", "dead_code_elimination",
    "find_codegen", "merge_composite_functions", "partition", "partition_passes",
    "pass_instrument", "RecomposeOps", "recompose_ops", "ToMixedPrecision", "to_mixed_precision",
    "rewrite_functions", "codegen_module", "run_codegen", "set_codegen_lookup", "stub_codegen",
]
