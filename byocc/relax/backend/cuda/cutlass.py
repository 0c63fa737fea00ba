"""``relax.backend.cuda.cutlass``: ``partition_for_cutlass`` (spec/backends.md section 1.1).

byocc runs step 2 of TVM's driver: ``FuseOpsByPattern(get_patterns_with_prefix("cutlass"),
bind_constants=False, annotate_codegen=annotate_codegen)``. Not done: step 1, the 17
attention rewrites (a hand-written ``matmul -> softmax -> matmul`` chain stays as it is;
write ``R.nn.attention`` to offload attention), and steps 3-4, the workspace annotation
and AllocateWorkspace, which only act on attention composites: when one forms, the
function raises :class:`~byocc.ir.UnsupportedError` rather than print a module that
differs from TVM's (TVM 0.27 itself fails there with ``KeyError: 'T.float16'``).
"""

from __future__ import annotations

from byocc.backends import get_patterns_with_prefix
from byocc.ir import Function, IRModule, UnsupportedError
from byocc.transform import FuseOpsByPattern


def partition_for_cutlass(mod: IRModule, annotate_codegen: bool = True, use_flash_mqa: bool = True) -> IRModule:
    """Partition ``mod`` into CUTLASS-supported subgraphs (public ``Codegen`` wrappers when
    ``annotate_codegen``, else private ``Composite`` functions). ``use_flash_mqa`` selects
    a rewrite byocc does not perform (see the module docstring)."""
    patterns = get_patterns_with_prefix("cutlass")
    out = FuseOpsByPattern(patterns, bind_constants=False, annotate_codegen=annotate_codegen)(mod)
    attention = sorted(_attention_composites(out))
    if attention:
        raise UnsupportedError(
            "partition_for_cutlass: attention composites formed (" + ", ".join(attention) + "); "
            "their workspace step (annotate_workspace, AllocateWorkspace) is not implemented by "
            "byocc. Use FuseOpsByPattern(get_patterns_with_prefix('cutlass'), "
            "bind_constants=False) directly, or `byocc partition --backend cutlass`.")
    return out


def _attention_composites(mod: IRModule) -> set[str]:
    """Names of composite functions whose pattern name mentions attention (the ones TVM's
    workspace step annotates), top-level or bound inside a Codegen wrapper."""
    found = set()
    for name, func in mod.items():
        if not isinstance(func, Function):
            continue
        if "attention" in str(func.attrs.get("Composite", "")):
            found.add(name)
        if "Codegen" in func.attrs:
            for block in func.body.blocks:
                for b in block.bindings:
                    value = getattr(b, "value", None)
                    if isinstance(value, Function) and "attention" in str(value.attrs.get("Composite", "")):
                        found.add(name)
    return found


__all__ = ["partition_for_cutlass"]
