"""The seed partitioning script, written for Apache TVM, run on byocc: only the imports
changed (spec/textual-ir.md section 8, E1, E2 and E4). Run: ``python samples/seed_api.py``."""

from byocc import relax  # was: import tvm; from tvm import relax
from byocc.relax.backend.cuda.cublas import partition_for_cublas  # noqa: F401
from byocc.relax.backend.cuda.cutlass import partition_for_cutlass  # noqa: F401
from byocc.relax.dpl.pattern import (  # noqa: F401
    is_op,
    is_tuple_get_item,
    make_fused_bias_activation_pattern,
    wildcard,
)
from byocc.relax.transform import PatternCheckContext  # noqa: F401

x = relax.Var("x", relax.TensorStructInfo([10, 10], "float32"))
y = relax.Var("y", relax.TensorStructInfo([10, 10], "float32"))
bb = relax.BlockBuilder()
with bb.function("main", [x, y]):
    with bb.dataflow():
        lv0 = bb.emit(relax.op.multiply(x, y))
        gv = bb.emit_output(lv0)
    bb.emit_func_output(gv)
mod = bb.get()
mod = relax.transform.CanonicalizeBindings()(mod)
mod.show()

patterns = [("cutlass.multiply", is_op("relax.multiply")(wildcard(), wildcard()))]
mod1 = relax.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=True)(mod)
assert relax.analysis.well_formed(mod1)
mod1.show()

mod2 = relax.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=False)(mod)
mod2 = relax.transform.MergeCompositeFunctions()(mod2)
assert relax.analysis.well_formed(mod2)
mod2.show()
