"""TVM 0.27's cutlass ``annotate_workspace`` with its dtype lookup fixed, for scripts that run
TVM as an oracle (tools/gen_attention_goldens.py, tools/tvm_diff_attention.py,
bench/partition_for_cutlass.py). Import it only in a Python with apache-tvm 0.27; never in
byocc or its tests.

TVM's version looks ``ret_ty.dtype`` (a DataType object) up in a dict keyed by strings and
raises ``KeyError`` for every attention composite (spec/backends.md section 16, item 1).
:func:`install` replaces it with the same annotation using the dtype's string: every cutlass
attention composite gets ``WorkspaceSize`` = output bytes (8 when symbolic), and a cutlass
``Codegen`` wrapper copies its composite's size.
"""

import tvm
from tvm import tirx
from tvm.relax import Function
from tvm.relax.backend.cuda import cutlass
from tvm.relax.expr_functor import PyExprMutator
from tvm.relax.expr_functor import mutator


@mutator
class _Workspace(PyExprMutator):
    def visit_function_(self, f):
        attrs = f.attrs
        if attrs is None or "Composite" not in attrs:
            body = self.visit_expr(f.body)
            g = Function(f.params, body, f.ret_ty, f.is_pure, attrs, f.span)
            sym = attrs.get("global_symbol") if attrs is not None else None
            if sym is not None and "cutlass" in str(sym):
                inner = body.blocks[0].bindings[0].value
                if inner.attrs is not None and "WorkspaceSize" in inner.attrs:
                    g = g.with_attr("WorkspaceSize", inner.attrs["WorkspaceSize"])
            return g
        comp = str(attrs["Composite"])
        if "attention" in comp and "cutlass" in comp:
            elem = {"float16": 2, "float32": 4}[str(f.ret_ty.dtype)]
            size = cutlass._shape_1d(f.ret_ty.shape) * elem
            if not isinstance(size, int | tirx.expr.IntImm):
                size = 8
            return f.with_attr("WorkspaceSize", int(size))
        return f


@tvm.transform.module_pass(opt_level=0)
def annotate_workspace(mod, _ctx):
    w = _Workspace(mod)
    for name, f in mod.functions_items():
        if isinstance(f, Function):
            mod.update_func(name, w.visit_expr(f))
    return mod


def install() -> None:
    """Make ``tvm.relax.backend.cuda.cutlass.partition_for_cutlass`` use the fixed step."""
    cutlass.annotate_workspace = annotate_workspace
