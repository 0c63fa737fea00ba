"""Expected texts of spec/textual-ir.md section 8 (E1-E18), verbatim (TVM 0.27 output)."""

EXAMPLES = {
    1: """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        with R.dataflow():
            gv: R.Tensor((10, 10), dtype="float32") = R.multiply(x, y)
            R.output(gv)
        return gv""",
    2: """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def fused_relax_multiply_cutlass(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        R.func_attr({"Codegen": "cutlass"})
        # from tvm.script import relax as R
        
        @R.function
        def local_func(x_1: R.Tensor((10, 10), dtype="float32"), y_1: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
            R.func_attr({"Composite": "cutlass.multiply"})
            with R.dataflow():
                gv: R.Tensor((10, 10), dtype="float32") = R.multiply(x_1, y_1)
                R.output(gv)
            return gv

        output: R.Tensor((10, 10), dtype="float32") = local_func(x, y)
        return output

    @R.function
    def main(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((10, 10), dtype="float32") = cls.fused_relax_multiply_cutlass(x, y)
            R.output(gv)
        return gv""",
    3: """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function(private=True)
    def fused_relax_multiply(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        R.func_attr({"Composite": "cutlass.multiply", "Primitive": True})
        with R.dataflow():
            gv: R.Tensor((10, 10), dtype="float32") = R.multiply(x, y)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((10, 10), dtype="float32") = cls.fused_relax_multiply(x, y)
            R.output(gv)
        return gv""",
    4: """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def fused_relax_multiply1_cutlass(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        R.func_attr({"Codegen": "cutlass"})
        # from tvm.script import relax as R
        
        @R.function
        def gv(x_1: R.Tensor((10, 10), dtype="float32"), y_1: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
            R.func_attr({"Composite": "cutlass.multiply"})
            with R.dataflow():
                gv_1: R.Tensor((10, 10), dtype="float32") = R.multiply(x_1, y_1)
                R.output(gv_1)
            return gv_1

        gv_1: R.Tensor((10, 10), dtype="float32") = gv(x, y)
        return gv_1

    @R.function
    def main(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((10, 10), dtype="float32") = cls.fused_relax_multiply1_cutlass(x, y)
            R.output(gv)
        return gv""",
    5: """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        with R.dataflow():
            gv = R.call_dps_packed("fused_relax_multiply1_cutlass", (x, y), out_ty=R.Tensor((10, 10), dtype="float32"))
            R.output(gv)
        return gv""",
    6: """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def fused_relax_nn_conv2d_relax_add_relax_nn_relu_dnnl(data: R.Tensor((1, 3, 16, 16), dtype="float32"), weight: R.Tensor((8, 3, 3, 3), dtype="float32"), bias: R.Tensor((1, 8, 1, 1), dtype="float32")) -> R.Tensor((1, 8, 16, 16), dtype="float32"):
        R.func_attr({"Codegen": "dnnl"})
        # from tvm.script import relax as R
        
        @R.function
        def local_func(data_1: R.Tensor((1, 3, 16, 16), dtype="float32"), weight_1: R.Tensor((8, 3, 3, 3), dtype="float32"), bias_1: R.Tensor((1, 8, 1, 1), dtype="float32")) -> R.Tensor((1, 8, 16, 16), dtype="float32"):
            R.func_attr({"Composite": "dnnl.conv2d_bias_relu"})
            with R.dataflow():
                lv: R.Tensor((1, 8, 16, 16), dtype="float32") = R.nn.conv2d(data_1, weight_1, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
                lv1: R.Tensor((1, 8, 16, 16), dtype="float32") = R.add(lv, bias_1)
                gv: R.Tensor((1, 8, 16, 16), dtype="float32") = R.nn.relu(lv1)
                R.output(gv)
            return gv

        output: R.Tensor((1, 8, 16, 16), dtype="float32") = local_func(data, weight, bias)
        return output

    @R.function
    def main(data: R.Tensor((1, 3, 16, 16), dtype="float32"), weight: R.Tensor((8, 3, 3, 3), dtype="float32"), bias: R.Tensor((1, 8, 1, 1), dtype="float32")) -> R.Tensor((1, 8, 16, 16), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((1, 8, 16, 16), dtype="float32") = cls.fused_relax_nn_conv2d_relax_add_relax_nn_relu_dnnl(data, weight, bias)
            R.output(gv)
        return gv""",
    7: """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def fused_relax_matmul_relax_add_relax_nn_gelu1_cutlass(x: R.Tensor((32, 64), dtype="float16"), w: R.Tensor((64, 128), dtype="float16"), b: R.Tensor((128,), dtype="float16")) -> R.Tensor((32, 128), dtype="float16"):
        R.func_attr({"Codegen": "cutlass"})
        # from tvm.script import relax as R
        
        @R.function
        def gv(x_1: R.Tensor((32, 64), dtype="float16"), w_1: R.Tensor((64, 128), dtype="float16"), b_1: R.Tensor((128,), dtype="float16")) -> R.Tensor((32, 128), dtype="float16"):
            R.func_attr({"Composite": "cutlass.matmul_bias_gelu"})
            with R.dataflow():
                lv: R.Tensor((32, 128), dtype="float16") = R.matmul(x_1, w_1, out_dtype="float16")
                lv1: R.Tensor((32, 128), dtype="float16") = R.add(lv, b_1)
                gv_1: R.Tensor((32, 128), dtype="float16") = R.nn.gelu(lv1)
                R.output(gv_1)
            return gv_1

        gv_1: R.Tensor((32, 128), dtype="float16") = gv(x, w, b)
        return gv_1

    @R.function
    def main(x: R.Tensor((32, 64), dtype="float16"), w: R.Tensor((64, 128), dtype="float16"), b: R.Tensor((128,), dtype="float16")) -> R.Tensor((32, 128), dtype="float16"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((32, 128), dtype="float16") = cls.fused_relax_matmul_relax_add_relax_nn_gelu1_cutlass(x, w, b)
            R.output(gv)
        return gv""",
    8: """\
# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import relax as R

batch = TypeVar("batch")
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((batch, 64), dtype="float16"), w: R.Tensor((64, 128), dtype="float16")) -> R.Tensor(("batch * 2", 64), dtype="float16"):
        with R.dataflow():
            lv: R.Tensor((batch, 128), dtype="float16") = R.matmul(x, w, out_dtype=None)
            lv1: R.Tensor((batch, 128), dtype="float16") = R.nn.relu(lv)
            gv: R.Tensor((batch * 2, 64), dtype="float16") = R.reshape(lv1, R.shape([batch * 2, 64]))
            R.output(gv)
        return gv""",
    9: """\
from __future__ import annotations

# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main[batch](x: R.Tensor((batch, 64), dtype="float16"), w: R.Tensor((64, 128), dtype="float16")) -> R.Tensor((batch * 2, 64), dtype="float16"):
        with R.dataflow():
            lv: R.Tensor((batch, 128), dtype="float16") = R.matmul(x, w, out_dtype=None)
            lv1: R.Tensor((batch, 128), dtype="float16") = R.nn.relu(lv)
            gv: R.Tensor((batch * 2, 64), dtype="float16") = R.reshape(lv1, R.shape([batch * 2, 64]))
            R.output(gv)
        return gv""",
    10: """\
# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import relax as R

batch = TypeVar("batch")
@I.ir_module
class Module:
    @R.function
    def fused_relax_matmul_relax_nn_relu1_cutlass(x: R.Tensor((batch, 64), dtype="float16"), w: R.Tensor((64, 128), dtype="float16")) -> R.Tensor((batch, 128), dtype="float16"):
        R.func_attr({"Codegen": "cutlass"})
        # from typing import TypeVar
        # from tvm.script import relax as R
        
        batch_1 = TypeVar("batch_1")
        @R.function
        def gv(x_1: R.Tensor((batch_1, 64), dtype="float16"), w_1: R.Tensor((64, 128), dtype="float16")) -> R.Tensor((batch_1, 128), dtype="float16"):
            R.func_attr({"Composite": "cutlass.matmul_relu"})
            with R.dataflow():
                lv: R.Tensor((batch_1, 128), dtype="float16") = R.matmul(x_1, w_1, out_dtype=None)
                gv_1: R.Tensor((batch_1, 128), dtype="float16") = R.nn.relu(lv)
                R.output(gv_1)
            return gv_1

        gv_1: R.Tensor((batch, 128), dtype="float16") = gv(x, w)
        return gv_1

    @R.function
    def main(x: R.Tensor((batch, 64), dtype="float16"), w: R.Tensor((64, 128), dtype="float16")) -> R.Tensor(("batch * 2", 64), dtype="float16"):
        cls = Module
        with R.dataflow():
            lv: R.Tensor((batch, 128), dtype="float16") = cls.fused_relax_matmul_relax_nn_relu1_cutlass(x, w)
            gv: R.Tensor((batch * 2, 64), dtype="float16") = R.reshape(lv, R.shape([batch * 2, 64]))
            R.output(gv)
        return gv""",
    11: """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 2), dtype="float32"), y: R.Tensor((2, 2), dtype="float32")) -> R.Tuple(R.Tensor((2, 2), dtype="float32"), R.Tensor((2, 2), dtype="float32")):
        a: R.Tensor((2, 2), dtype="float32") = R.add(x, y)
        with R.dataflow():
            b: R.Tensor((2, 2), dtype="float32") = R.multiply(a, y)
            c: R.Tensor((2, 2), dtype="float32") = R.subtract(b, x)
            d: R.Tuple(R.Tensor((2, 2), dtype="float32"), R.Tensor((2, 2), dtype="float32")) = b, c
            e: R.Tensor((2, 2), dtype="float32") = d[1]
            R.output(b, e)
        g = R.call_dps_packed("ext_pair", (b, e), out_ty=[R.Tensor((2, 2), dtype="float32"), R.Tensor((2, 2), dtype="float32")])
        h: R.Tensor((2, 2), dtype="float32") = g[0]
        return (h, e)""",
    12: """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((2, 3), dtype="float32") = R.add(x, metadata["ir.GenericConst"][0])
            lv1: R.Tensor((2, 3), dtype="float32") = R.multiply(lv, metadata["ir.GenericConst"][0])
            lv2: R.Tensor((3,), dtype="float32") = R.astype(metadata["ir.GenericConst"][1], dtype="float32")
            lv3: R.Tensor((2, 3), dtype="float32") = R.multiply(lv1, R.const(0.10000000149011612, "float32"))
            lv4: R.Tensor((2, 3), dtype="float32") = R.add(lv3, R.const(1.0, "float32"))
            gv: R.Tensor((2, 3), dtype="float32") = R.add(lv4, lv2)
            R.output(gv)
        return gv

# Metadata omitted. Use show_meta=True in script() method to show it.""",
    13: """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    I.module_attrs({"const_name_to_constant": {"fused_relax_multiply1_cutlass_cutlass_const_0": metadata["ffi.Tensor"][0]}, "external_mods": [metadata["ffi.Module"][0]]})
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            gv = R.call_dps_packed("fused_relax_multiply1_cutlass", (x,), out_ty=R.Tensor((4,), dtype="float32"))
            R.output(gv)
        return gv

# Metadata omitted. Use show_meta=True in script() method to show it.""",
    14: """\
# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

m = TypeVar("m")
n = TypeVar("n")
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((2, 3), dtype="float32"), b: R.Tensor(dtype="float16", ndim=2), c: R.Tensor(dtype="bool"), d: R.Tensor((4,)), e: R.Tensor(ndim=3), f: R.Tensor, g: R.Tuple(R.Tensor((2,), dtype="int32"), R.Tensor((), dtype="bool")), h: R.Tuple, i: R.Shape([2, 3]), j: R.Shape(ndim=2), k: R.Shape(ndim=-1), l: R.Any, o: R.Callable((R.Tensor((2,), dtype="float32"),), R.Tensor((2,), dtype="float32"), True), p: R.Tensor((n, "m * 2"), dtype="bfloat16"), s: T.int64) -> R.Tensor((2, 3), dtype="float32"):
        return a""",
    15: """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function(private=True)
    def A_func(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        return x

    @R.function(pure=False)
    def _x(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        return x

    @R.function(pure=False, private=True)
    def a_func(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Alpha": "s", "beta": True, "gamma": 1.5, "list": [1, 2], "nested": {"a": "x", "b": 1}, "zeta": 1})
        return x

    @R.function
    def b_func(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"global_symbol": "ext_sym"})
        return x

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        y: R.Tensor((4,), dtype="float32") = cls.b_func(x)
        z: R.Tensor((4,), dtype="float32") = cls.A_func(y)
        return z""",
    16: """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), dtype="float32"), x_1: R.Tensor((2,), dtype="float32"), x_1_1: R.Tensor((2,), dtype="float32"), R_1: R.Tensor((2,), dtype="float32"), cls_1: R.Tensor((2,), dtype="float32"), Module_1: R.Tensor((2,), dtype="float32"), metadata: R.Tensor((2,), dtype="float32"), if: R.Tensor((2,), dtype="float32"), a_b: R.Tensor((2,), dtype="float32"), v: R.Tensor((2,), dtype="float32"), caf__: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        x_2: R.Tensor((2,), dtype="float32") = R.add(x, x_1)
        T_1: R.Tensor((2,), dtype="float32") = R.add(x_2, x_1_1)
        main: R.Tensor((2,), dtype="float32") = R.add(T_1, R_1)
        return main""",
    17: """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    ext_global = R.ExternFunc("ext_sym")
    @R.function(pure=False)
    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        gv: R.Callable = R.ExternFunc("my_packed")
        gv1: R.Tensor((2,), dtype="float32") = R.call_packed("my_packed", x, ty_args=(R.Tensor((2,), dtype="float32"),))
        R.call_packed("log_it", gv1, ty_args=(R.Tuple,))
        gv3 = R.call_dps_packed("my_packed", (gv1,), out_ty=R.Tensor((2,), dtype="float32"))
        gv4 = R.call_dps_packed("other", (gv3,), out_ty=R.Tensor((2,), dtype="float32"))
        return gv4""",
    18: """\
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=2)) -> R.Tensor(dtype="float32", ndim=2):
        m = T.int64()
        k = T.int64()
        y: R.Tensor((m, k), dtype="float32") = R.match_cast(x, R.Tensor((m, k), dtype="float32"))
        z: R.Tensor((m, k), dtype="float32") = R.add(y, y)
        return z""",
}
