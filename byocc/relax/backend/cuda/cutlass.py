"""``relax.backend.cuda.cutlass``: ``partition_for_cutlass`` (docs/codegen.md#partition_for_cutlass).

TVM 0.27's driver, read from the cutlass backend's record
(:func:`byocc.backends.partition_for_backend`; ``byocc partition --backend cutlass
--backend-steps --no-bind-constants`` runs the same functions):

1. per Relax function, the attention rewrites (:mod:`byocc.backends.cutlass.rewrites`; the
   multi-query one first when ``use_flash_mqa``), each through ``rewrite_call``, which also
   cleans the function up (canonical bindings, common subexpressions, dead bindings) where
   TVM's does;
2. ``FuseOpsByPattern(get_patterns_with_prefix("cutlass"), bind_constants=False,
   annotate_codegen=annotate_codegen)``;
3. :func:`annotate_workspace` (attention composites need output-sized scratch);
4. ``AllocateWorkspace``.

TVM 0.27 defects byocc does not copy: its workspace step fails with ``KeyError:
'T.float16'`` (docs/codegen.md#d1-attention-workspace-keyerror); its rewriter raises ``TypeError`` for every chain
with a BSH output (``R.reshape`` given an FFI array) and for every chain whose q/k/v
sub-check fails. byocc rewrites the former as intended and leaves the latter unchanged.
"""

from __future__ import annotations

from byocc.backends import partition_for_backend
from byocc.backends.cutlass.workspace import annotate_workspace
from byocc.ir import IRModule


def partition_for_cutlass(mod: IRModule, annotate_codegen: bool = True,
                          use_flash_mqa: bool = True) -> IRModule:
    """Partition ``mod`` into CUTLASS-supported subgraphs (public ``Codegen`` wrappers when
    ``annotate_codegen``, else private ``Composite`` functions), then give attention
    functions a workspace. ``use_flash_mqa`` adds the multi-query rewrite (``R.repeat`` on
    K and V) before the 16 attention rewrites."""
    if not isinstance(mod, IRModule):
        raise TypeError(f"partition_for_cutlass: expected an IRModule, got {type(mod).__name__}")
    return partition_for_backend(mod, "cutlass", annotate_codegen=annotate_codegen,
                                 bind_constants=False, use_flash_mqa=use_flash_mqa)


__all__ = ["annotate_workspace", "partition_for_cutlass"]
