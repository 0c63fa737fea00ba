"""``byocc.script`` (``from_source``, ``@I.ir_module``, ``@R.function``) and the backend
drivers ``partition_for_cutlass`` / ``partition_for_cublas`` on modules written as
decorated classes, against TVM 0.27's goldens (spec/partitioning-examples 26 and 27:
the cutlass / cublas tables with bind_constants=False, what both drivers use)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import TypeVar

import pytest

from byocc import relax
from byocc.ir import Function
from byocc.ir import InputError
from byocc.ir import IRModule
from byocc.relax.backend import get_patterns_with_prefix
from byocc.relax.backend.cuda.cublas import partition_for_cublas
from byocc.relax.backend.cuda.cutlass import partition_for_cutlass
from byocc.script import from_source
from byocc.script import ir as I
from byocc.script import relax as R
from byocc.script import tirx as T

EXAMPLES = Path(__file__).parents[1] / "data" / "partitioning-examples"


def golden(case: str, name: str) -> str:
    return (EXAMPLES / case / name).read_text(encoding="utf-8")


@I.ir_module
class CutlassModule:
    @R.function
    def main(x: R.Tensor((16, 32), "float16"), w: R.Tensor((32, 64), "float16"), b: R.Tensor((64,), "float16")):
        with R.dataflow():
            mm = R.matmul(x, w)
            ad = R.add(mm, b)
            r = R.nn.relu(ad)
            wt = R.permute_dims(w)
            out = R.matmul(r, wt)
            R.output(out)
        return out


@I.ir_module
class CublasModule:
    @R.function
    def main(x: R.Tensor((16, 32), "float16"), w: R.Tensor((64, 32), "float16"), b: R.Tensor((64,), "float16")):
        with R.dataflow():
            wt = R.permute_dims(w)
            mm = R.matmul(x, wt)
            ad = R.add(mm, b)
            g = R.nn.gelu(ad)
            R.output(g)
        return g


@I.ir_module
class WithMembers:
    @R.function(private=True)
    def helper(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        return x

    @R.function
    def main(x: R.Tensor((2,), "float32"), n: T.int64) -> R.Tensor((2,), "float32"):
        cls = WithMembers
        y = cls.helper(x)
        return y


n = TypeVar("n")


@I.ir_module
class Symbolic:
    @R.function
    def main(x: R.Tensor((n, 4), dtype="float32")) -> R.Tensor(("n * 2", 2), dtype="float32"):
        with R.dataflow():
            lv = R.reshape(x, R.shape([n * 2, 2]))
            R.output(lv)
        return lv


@R.function
def standalone(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
    with R.dataflow():
        y = R.add(x, x)
        R.output(y)
    return y


def test_ir_module_decorator_parses_the_class():
    assert isinstance(CutlassModule, IRModule)
    assert CutlassModule.script() + "\n" == golden("26_cutlass_table", "input.txt")
    assert CublasModule.script() + "\n" == golden("27_cublas_table", "input.txt")


def test_class_members_private_functions_and_cls_references():
    assert WithMembers["helper"].attrs == {}
    assert WithMembers["main"].attrs == {"global_symbol": "main"}
    text = WithMembers.script()
    assert "@R.function(private=True)\n    def helper(" in text
    assert "cls = Module\n        y: R.Tensor((2,), dtype=\"float32\") = cls.helper(x)" in text
    assert "n: T.int64" in text


def test_function_decorator_returns_a_function():
    assert isinstance(standalone, Function)
    assert standalone.attrs == {"global_symbol": "standalone"}
    assert str(standalone.body.blocks[0].bindings[0].value) == "R.add(x, x)"


def test_type_vars_of_the_defining_scope_declare_symbolic_dims():
    text = Symbolic.script()
    assert text.startswith('# from typing import TypeVar\n')
    assert 'n = TypeVar("n")\n@I.ir_module' in text
    assert 'def main(x: R.Tensor((n, 4), dtype="float32")) -> R.Tensor(("n * 2", 2), dtype="float32"):' in text

    m = TypeVar("m")

    @R.function(private=True)
    def local(y: R.Tensor((m,), dtype="float16")) -> R.Tensor((m,), dtype="float16"):
        return y

    assert isinstance(local, Function) and local.attrs == {}  # private: no global_symbol
    assert local.params[0].struct_info.shape[0].name == "m"


def test_from_source_matches_the_decorator():
    text = golden("26_cutlass_table", "input.txt")
    assert from_source(text).script() + "\n" == text


def test_from_source_errors_are_located():
    with pytest.raises(InputError) as info:
        from_source("@I.ir_module\nclass M:\n    @R.function\n    def main(x: R.Tensor((2,), \"float32\")):\n"
                    "        return R.nosuchop(x)\n")
    assert "unknown operator R.nosuchop" in info.value.message
    assert (info.value.span.line, info.value.span.column) == (5, 16)


BAD_MODULE = '''
from byocc.script import ir as I, relax as R


def make():
    @I.ir_module
    class Bad:
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            return R.nosuchop(x)
    return Bad
'''


def test_decorated_source_errors_point_into_the_users_file(tmp_path, monkeypatch):
    path = tmp_path / "user_model.py"
    path.write_text(BAD_MODULE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("user_model", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "user_model", module)  # as an import would
    spec.loader.exec_module(module)
    with pytest.raises(InputError) as info:
        module.make()
    assert info.value.span.source == str(path)
    assert info.value.span.line == 10  # the file's line, though the class is nested in make()


def test_source_less_objects_are_refused_clearly():
    namespace = {"I": I, "R": R}
    with pytest.raises(InputError, match="cannot read the source"):
        exec("@I.ir_module\nclass Lost:\n    pass\n", namespace)  # noqa: S102  (no file behind it)


def test_partition_for_cutlass_matches_tvm():
    out = partition_for_cutlass(CutlassModule)
    assert out.script() + "\n" == golden("26_cutlass_table", "p1_annotate.txt")
    assert relax.analysis.well_formed(out)


def test_partition_for_cutlass_without_annotation_gives_composites():
    out = partition_for_cutlass(CutlassModule, annotate_codegen=False)
    assert out.script() + "\n" == golden("26_cutlass_table", "p2_fuse.txt")


def test_partition_for_cublas_matches_tvm():
    out = partition_for_cublas(CublasModule)
    assert out.script() + "\n" == golden("27_cublas_table", "p1_annotate.txt")


def test_partition_drivers_use_the_registry_tables():
    names = [p.name for p in get_patterns_with_prefix("cublas")]
    assert names and all(n.startswith("cublas.") for n in names)
    cutlass = [p.name for p in get_patterns_with_prefix("cutlass")]
    assert "cutlass.matmul_bias_relu" in cutlass and "cutlass.attention" in cutlass


@I.ir_module
class Attention:
    @R.function
    def main(q: R.Tensor((2, 16, 4, 32), "float16"), k: R.Tensor((2, 16, 4, 32), "float16"),
             v: R.Tensor((2, 16, 4, 32), "float16")):
        with R.dataflow():
            o = R.nn.attention(q, k, v)
            R.output(o)
        return o


def test_partition_for_cutlass_gives_attention_a_workspace():
    # steps 3-4 of the driver (tests/api/test_api_partition_for_cutlass.py compares with TVM)
    out = partition_for_cutlass(Attention)
    assert "fused_relax_nn_attention_cutlass1" in out.names()
    assert "fused_relax_nn_attention_cutlass" not in out.names()
    assert 'R.builtin.alloc_tensor(R.shape([8192]), R.dtype("uint8"), 0, R.str("global"))' in out.script()
