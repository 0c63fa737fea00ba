"""``relax.backend.cuda.cutlass``: ``partition_for_cutlass`` (spec/backends.md section 1.1).

The four steps of TVM 0.27's driver:

1. per Relax function, the attention rewrites (:mod:`byocc.backends.cutlass.rewrites`; the
   multi-query one first when ``use_flash_mqa``), each through ``rewrite_call``, which also
   cleans the function up (canonical bindings, common subexpressions, dead bindings) where
   TVM's does;
2. ``FuseOpsByPattern(get_patterns_with_prefix("cutlass"), bind_constants=False,
   annotate_codegen=annotate_codegen)``;
3. :func:`annotate_workspace` (attention composites need output-sized scratch);
4. ``AllocateWorkspace``.

TVM 0.27 defects byocc does not copy: its workspace step fails with ``KeyError:
'T.float16'`` (spec section 16, item 1); its rewriter raises ``TypeError`` for every chain
with a BSH output (``R.reshape`` given an FFI array) and for every chain whose q/k/v
sub-check fails. byocc rewrites the former as intended and leaves the latter unchanged.
"""

from __future__ import annotations

import operator
from functools import reduce

from byocc.backends import get_patterns_with_prefix
from byocc.backends.cutlass.rewrites import rewrite_attention
from byocc.ir import Function, IRModule, SeqExpr, TensorStructInfo, UnsupportedError, VarBinding
from byocc.transform import AllocateWorkspace, FuseOpsByPattern, map_functions

_ELEMENT_BYTES = {"float16": 2, "float32": 4}


def partition_for_cutlass(mod: IRModule, annotate_codegen: bool = True,
                          use_flash_mqa: bool = True) -> IRModule:
    """Partition ``mod`` into CUTLASS-supported subgraphs (public ``Codegen`` wrappers when
    ``annotate_codegen``, else private ``Composite`` functions), then give attention
    functions a workspace. ``use_flash_mqa`` adds the multi-query rewrite (``R.repeat`` on
    K and V) before the 16 attention rewrites."""
    if not isinstance(mod, IRModule):
        raise TypeError(f"partition_for_cutlass: expected an IRModule, got {type(mod).__name__}")
    mod = map_functions(mod, lambda f: rewrite_attention(f, use_flash_mqa))
    patterns = get_patterns_with_prefix("cutlass")
    out = FuseOpsByPattern(patterns, bind_constants=False, annotate_codegen=annotate_codegen)(mod)
    out = annotate_workspace(out)
    return AllocateWorkspace()(out)


def annotate_workspace(mod: IRModule) -> IRModule:
    """Set ``WorkspaceSize`` (output bytes; 8 when the shape is symbolic) on every cutlass
    attention composite, and copy it onto the ``Codegen`` wrapper whose first binding is
    such a composite (TVM's ``annotate_workspace``).

    The result's function order is the one TVM's module map has after this step, which
    AllocateWorkspace's naming depends on: TVM updates every Relax function in name order.
    Its module map moves an updated entry to the end once the map holds 4 or more entries
    and updates in place below that (measured with TVM 0.27), so from 4 entries on the Relax
    functions end up in name order after the others; smaller modules keep their order."""
    names = mod.names()
    if len(names) >= 4:
        others = [n for n in names if not isinstance(mod[n], Function)]
        names = others + sorted(n for n in names if isinstance(mod[n], Function))
    functions = {}
    for name in names:
        func = mod[name]
        functions[name] = _annotate(func) if isinstance(func, Function) else func
    return IRModule(functions, mod.attrs, {n: mod.get_global_var(n) for n in names}, mod.extras)


def _annotate(func: Function) -> Function:
    if "Composite" in func.attrs:
        composite = str(func.attrs["Composite"])
        if "attention" in composite and "cutlass" in composite:
            return func.with_attrs(WorkspaceSize=_workspace_bytes(func))
        return func
    changed = False
    blocks = []
    for block in func.body.blocks:
        bindings = []
        for b in block.bindings:
            if isinstance(b, VarBinding) and isinstance(b.value, Function):
                value = _annotate(b.value)
                if value is not b.value:  # attributes only: the variable's type is unchanged
                    b = VarBinding(b.var, value, b.span)
                    changed = True
            bindings.append(b)
        blocks.append(type(block)(tuple(bindings), block.span))
    if changed:
        body = SeqExpr(tuple(blocks), func.body.body, func.body.span)
        func = Function(func.params, body, func.ret_struct_info, func.is_pure, dict(func.attrs), func.span)
    symbol = func.attrs.get("global_symbol")
    if symbol is not None and "cutlass" in str(symbol) and func.body.blocks and func.body.blocks[0].bindings:
        first = func.body.blocks[0].bindings[0].value
        if isinstance(first, Function) and "WorkspaceSize" in first.attrs:
            return func.with_attrs(WorkspaceSize=first.attrs["WorkspaceSize"])
    return func


def _workspace_bytes(func: Function) -> int:
    ret = func.ret_struct_info
    if not isinstance(ret, TensorStructInfo) or ret.shape is None:
        raise UnsupportedError("partition_for_cutlass: an attention composite without a known output "
                               "shape; TVM's workspace step cannot size it", func.span)
    if ret.dtype not in _ELEMENT_BYTES:
        raise UnsupportedError(f"partition_for_cutlass: attention output dtype {ret.dtype!r}; TVM's "
                               "workspace step only sizes float16 and float32", func.span)
    dims = tuple(ret.shape)
    if not all(isinstance(d, int) for d in dims):
        return 8
    return reduce(operator.mul, dims, 1) * _ELEMENT_BYTES[ret.dtype]


__all__ = ["annotate_workspace", "partition_for_cutlass"]
