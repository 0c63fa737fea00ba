"""byocc.transform: passes, the pass manager and the partitioning pipeline (facade).

Passes (TVM names): CanonicalizeBindings, FuseOpsByPattern, MergeCompositeFunctions,
RunCodegen, DeadCodeElimination; :class:`Sequential` and :class:`PassContext` with the
instruments; :func:`partition` runs one of the two BYOC paths.
"""

from .allocate_workspace import AllocateWorkspace, allocate_workspace
from .canonicalize_bindings import CanonicalizeBindings, canonicalize_bindings
from .convert_layout import ConvertLayout, convert_layout
from .dead_code_elimination import DeadCodeElimination, dead_code_elimination
from .eliminate_common_subexpr import EliminateCommonSubexpr, eliminate_common_subexpr
from .fold_batch_norm import FoldBatchNorm, fold_batch_norm
from .fold_constant import FoldConstant, fold_constant
from .fuse_ops_by_pattern import FuseOpsByPattern
from .merge_composite_functions import MergeCompositeFunctions, merge_composite_functions
from .pass_manager import (
    DumpIR,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    PassInstrument,
    PassTimingInstrument,
    PrintAfterAll,
    PrintBeforeAll,
    Sequential,
    WellFormedInstrument,
    map_functions,
    pass_instrument,
)
from .pipeline import partition, partition_passes
from .prepare import RewriteFunctions, preparation_passes, prepare_module, rewrite_functions
from .rewrite_call import rewrite_call
from .run_codegen import (
    CodegenModule,
    RunCodegen,
    call_dps_packed,
    get_codegen,
    register_codegen,
    registered_codegens,
    run_codegen,
    stub_codegen,
    unregister_codegen,
)

__all__ = [
    "AllocateWorkspace", "allocate_workspace",
    "CanonicalizeBindings", "CodegenModule", "EliminateCommonSubexpr", "eliminate_common_subexpr",
    "rewrite_call", "map_functions", "ConvertLayout", "FoldBatchNorm", "FoldConstant",
    "convert_layout", "fold_batch_norm", "fold_constant", "preparation_passes", "prepare_module", "DeadCodeElimination", "DumpIR", "FuseOpsByPattern",
    "MergeCompositeFunctions", "ModulePass", "Pass", "PassContext", "PassInfo", "PassInstrument",
    "PassTimingInstrument", "PrintAfterAll", "PrintBeforeAll", "RewriteFunctions", "RunCodegen", "Sequential",
    "WellFormedInstrument", "call_dps_packed", "canonicalize_bindings", "dead_code_elimination",
    "get_codegen", "merge_composite_functions", "partition", "partition_passes",
    "pass_instrument", "register_codegen", "registered_codegens", "rewrite_functions", "run_codegen", "stub_codegen",
    "unregister_codegen",
]
