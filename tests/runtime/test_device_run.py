"""Whole-model device runs without a GPU (docs/runtime.md): the allocation plan, the
references under a device array namespace, the runner's logic with numpy standing in for
the device and a Python stand-in for the built library, and the command-line errors."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import random_max_pools
from conftest import run_cli

from byocc.cli.device_run import codegen_module
from byocc.cli.device_run import partitioned_module
from byocc.ir import Call
from byocc.ir import Op
from byocc.ops import bound_reference
from byocc.ops.xp import DeviceNamespace
from byocc.ops.xp import array_module
from byocc.ops.xp import use_array_module
from byocc.runtime import Interpreter
from byocc.runtime import bind_arguments
from byocc.runtime import compare
from byocc.runtime import random_arguments
from byocc.runtime.device import DeviceRunner
from byocc.runtime.device import HostDevice
from byocc.runtime.inputs import DEVICE_TOLERANCES
from byocc.runtime.memplan import ALIGN
from byocc.runtime.memplan import Interval
from byocc.runtime.memplan import plan_buffers
from byocc.runtime.memplan import plan_function
from byocc.runtime.values import Closure
from byocc.text import parse_module as parse

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


# --------------------------------------------------------------------------- the plan
def test_plan_reuses_a_buffer_after_its_last_use():
    # a -> b -> c -> d, each used only by the next: two buffers alternate
    ivs = [Interval("a", 1000, 0, 1), Interval("b", 1000, 1, 2), Interval("c", 1000, 2, 3), Interval("d", 1000, 3, 3)]
    plan = plan_buffers(ivs)
    off = {k: plan.offsets[k][0] for k in "abcd"}
    assert off["a"] == off["c"] and off["b"] == off["d"] and off["a"] != off["b"]
    assert plan.arena_bytes == 2 * 1024  # aligned to 256
    assert plan.live_peak == 2 * 1024 and plan.unplanned_bytes == 4 * 1024


def test_plan_never_overlaps_buffers_alive_at_once_and_reaches_the_live_peak_on_a_chain():
    rng = random.Random(7)
    for trial in range(200):
        ivs = []
        for i in range(rng.randint(1, 30)):
            first = rng.randint(0, 40)
            ivs.append(Interval(i, rng.choice([1, 100, 256, 1000, 5000, 1 << 16]), first, first + rng.randint(0, 10)))
        plan = plan_buffers(ivs)
        for a in ivs:
            oa, na = plan.offsets[a.key]
            assert oa % ALIGN == 0 and oa + na <= plan.arena_bytes
            for b in ivs:
                if a.key >= b.key or a.last < b.first or b.last < a.first:
                    continue
                ob, nb = plan.offsets[b.key]
                assert oa + na <= ob or ob + nb <= oa, (trial, a, b)
        assert plan.live_peak <= plan.arena_bytes <= plan.unplanned_bytes


def test_plan_rejects_an_interval_that_ends_before_it_starts():
    with pytest.raises(ValueError, match="bad interval"):
        plan_buffers([Interval("x", 8, 3, 2)])


ALIAS_MODULE = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 64), dtype="float16")) -> R.Tensor((256,), dtype="float16"):
        with R.dataflow():
            a = R.call_dps_packed("f", (x,), out_ty=R.Tensor((4, 64), dtype="float16"))
            v: R.Tensor((256,), dtype="float16") = R.reshape(a, R.shape([256]))
            b = R.call_dps_packed("f", (x,), out_ty=R.Tensor((4, 64), dtype="float16"))
            c = R.call_dps_packed("f", (b,), out_ty=R.Tensor((4, 64), dtype="float16"))
            r: R.Tensor((4, 64), dtype="float16") = R.nn.relu(c)
            d = R.call_dps_packed("f", (x,), out_ty=R.Tensor((4, 64), dtype="float16"))
            w: R.Tensor((256,), dtype="float16") = R.reshape(d, R.shape([256]))
            s: R.Tensor((256,), dtype="float16") = R.add(v, w)
            R.output(s)
        return s
"""


def test_plan_keeps_a_buffer_while_a_view_of_it_lives():
    mod = parse(ALIAS_MODULE)
    plan = plan_function(mod["main"])
    by_name = {k[0].name_hint: v for k, v in plan.offsets.items()}
    assert set(by_name) == {"a", "b", "c", "d"}
    # a's only direct use is the reshape, but the view v is used by the last binding: a must
    # not share memory with b, c or d; c is dead after relu (fresh), so d may take its place
    for other in "bcd":
        assert by_name[other][0] != by_name["a"][0]
    assert by_name["b"][0] != by_name["c"][0]  # c is computed from b
    assert by_name["d"][0] in (by_name["b"][0], by_name["c"][0])
    assert plan.aliases >= 2


SCRATCH_MODULE = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((64, 64), dtype="float16")) -> R.Tensor((64, 64), dtype="float16"):
        with R.dataflow():
            big = R.call_dps_packed("stem", (x,), out_ty=R.Tensor((256, 256), dtype="float16"))
            p: R.Tensor((256, 256), dtype="float16") = R.nn.relu(big)
            y = R.call_dps_packed("body", (p,), out_ty=R.Tensor((64, 64), dtype="float16"))
            R.output(y)
        return y
"""


def test_plan_puts_each_static_scratch_in_the_arena_for_its_own_call():
    """ResNet-50's merged function needs 128 MB of scratch after the stem's 51 MB output is
    dead: planned in the arena for its call only, the scratch reuses that space."""
    func = parse(SCRATCH_MODULE)["main"]
    plan = plan_function(func, scratch_bytes={"stem": 4096, "body": 131072})
    by = {(k[0].name_hint, k[1]): v for k, v in plan.offsets.items()}
    (big, _), (body_s, n_body), (stem_s, n_stem), (y, _) = (by[("big", 0)], by[("y", "scratch")],
                                                            by[("big", "scratch")], by[("y", 0)])
    assert (n_body, n_stem) == (131072, 4096)
    assert body_s == big  # big (128 KiB) is dead once relu read it: the body's scratch lies over it
    assert not (stem_s < big + 131072 and big < stem_s + 4096)  # the stem's scratch is beside its output
    assert not (body_s < y + 8192 and y < body_s + n_body)  # a call's scratch never overlaps its output
    assert plan.as_dict()["buffers"] == 2 and plan.as_dict()["scratch_buffers"] == 2
    assert plan.arena_bytes < 131072 + 4096 + 131072 + 8192  # less than everything apart


TUPLE_MODULE = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8, 8), dtype="float32")) -> R.Tensor((8, 8), dtype="float32"):
        with R.dataflow():
            t = R.call_dps_packed("two", (x,), out_ty=[R.Tensor((8, 8), dtype="float32"), R.Tensor((4,), dtype="float32")])
            a: R.Tensor((8, 8), dtype="float32") = t[0]
            b = R.call_dps_packed("f", (a,), out_ty=R.Tensor((8, 8), dtype="float32"))
            R.output(b)
        return b
"""


def test_plan_gives_each_field_of_a_tuple_output_its_buffer_and_keeps_them_while_a_field_lives():
    plan = plan_function(parse(TUPLE_MODULE)["main"])
    slots = {(k[0].name_hint, k[1]): v for k, v in plan.offsets.items()}
    assert set(slots) == {("t", 0), ("t", 1), ("b", 0)}
    assert slots[("t", 0)][1] == 256 and slots[("t", 1)][1] == 16
    # b is computed from t[0] (an alias of t): it may not take t's memory
    assert slots[("b", 0)][0] not in (slots[("t", 0)][0], slots[("t", 1)][0])
    assert slots[("t", 0)][0] != slots[("t", 1)][0]


def test_plan_of_the_codegen_mlp(tmp_path):
    out = _partition(tmp_path, "mlp_fp16.relax")
    plan = plan_function(codegen_module(out)["main"])
    assert len(plan.offsets) == 3
    offsets = sorted(v[0] for v in plan.offsets.values())
    assert offsets[0] == offsets[1] == 0  # the first hidden layer's buffer is reused by the output
    assert plan.arena_bytes == 2 * 16 * 128 * 2 < plan.unplanned_bytes


# --------------------------------------------------------------------------- xp references
class _DeviceArray(np.ndarray):
    """What a device array is to the namespace: another type than numpy's."""


class _FakeStrideTricks:
    @staticmethod
    def as_strided(x, shape, strides):
        return np.lib.stride_tricks.as_strided(x, shape, strides, subok=True)


class _FakeLib:
    stride_tricks = _FakeStrideTricks


class _FakeDeviceModule:
    """numpy whose arrays are _DeviceArray: enough of a device module for DeviceNamespace."""

    __name__ = "fakedevice"
    ndarray = _DeviceArray
    lib = _FakeLib
    array_class = _DeviceArray  # the class of the arrays it makes

    def __getattr__(self, name):
        fn = getattr(np, name)
        if not callable(fn) or isinstance(fn, type):
            return fn

        def wrapped(*args, **kwargs):
            out = fn(*args, **kwargs)
            return out.view(self.array_class) if isinstance(out, np.ndarray) else out

        return wrapped

    def asarray(self, x, dtype=None):
        return np.asarray(x, dtype=dtype).view(self.array_class)

    def array(self, x, dtype=None, copy=True):
        return np.array(x, dtype=dtype, copy=copy).view(self.array_class)


def test_a_device_namespace_counts_host_arrays_it_is_handed():
    ns = DeviceNamespace(_FakeDeviceModule())
    dev = ns.asarray(np.ones((4, 4), np.float32))
    assert type(dev) is _DeviceArray and ns.h2d_bytes == 64 and ns.h2d_copies == 1
    assert ns.asarray(dev) is dev and ns.h2d_bytes == 64  # a device array is not copied again
    assert ns.dtype is np.dtype and ns.errstate(all="ignore").__enter__() is not None
    with pytest.raises(AttributeError, match="Python element loop"):
        ns.frompyfunc(abs, 1, 1)


def _call(op_text: str):
    """A module with one binding, parsed: its Call node."""
    mod = parse(op_text)
    return mod["main"].body.blocks[0].bindings[0].value


REFERENCE_CASES = [
    ('x: R.Tensor((2, 8, 8, 4), dtype="float16"), w: R.Tensor((6, 3, 3, 4), dtype="float16")',
     'R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NHWC", '
     'kernel_layout="OHWI", out_layout="NHWC", out_dtype="float16")', "R.Tensor((2, 8, 8, 6), dtype=\"float16\")"),
    ('x: R.Tensor((1, 8, 8, 4), dtype="float32")',
     'R.nn.max_pool2d(x, pool_size=[2, 2], strides=[2, 2], dilation=[1, 1], padding=[0, 0, 0, 0], ceil_mode=False, '
     'count_include_pad=False, layout="NHWC", out_layout="NHWC")', "R.Tensor((1, 4, 4, 4), dtype=\"float32\")"),
    ('x: R.Tensor((1, 9, 9, 4), dtype="float32")',
     'R.nn.avg_pool2d(x, pool_size=[3, 3], strides=[2, 2], dilation=[1, 1], padding=[1, 1, 1, 1], ceil_mode=False, '
     'count_include_pad=False, layout="NHWC", out_layout="NHWC")', "R.Tensor((1, 5, 5, 4), dtype=\"float32\")"),
    ('x: R.Tensor((3, 10), dtype="float16")', "R.nn.softmax(x, axis=-1)", "R.Tensor((3, 10), dtype=\"float16\")"),
    ('x: R.Tensor((3, 10), dtype="float32")', "R.nn.gelu(x)", "R.Tensor((3, 10), dtype=\"float32\")"),
    ('x: R.Tensor((3, 10), dtype="float32"), g: R.Tensor((10,), dtype="float32"), b: R.Tensor((10,), dtype="float32")',
     "R.nn.layer_norm(x, g, b, axes=[-1], epsilon=1e-05, center=True, scale=True)", "R.Tensor((3, 10), dtype=\"float32\")"),
    ('x: R.Tensor((1, 4, 4, 2), dtype="float32")', "R.nn.pad(x, pad_width=[0, 0, 1, 1, 1, 1, 0, 0], pad_value=0.0, "
     'pad_mode="constant")', "R.Tensor((1, 6, 6, 2), dtype=\"float32\")"),
    ('x: R.Tensor((2, 3, 4), dtype="float32")', "R.mean(x, axis=[1, 2], keepdims=True)", "R.Tensor((2, 1, 1), dtype=\"float32\")"),
    ('x: R.Tensor((2, 3), dtype="float16"), y: R.Tensor((2, 3), dtype="float16")', "R.concat((x, y), axis=1)",
     "R.Tensor((2, 6), dtype=\"float16\")"),
    ('x: R.Tensor((2, 3), dtype="float32")', "R.clip(x, 0, 6)", "R.Tensor((2, 3), dtype=\"float32\")"),
    ('x: R.Tensor((2, 3), dtype="float16")', "R.astype(x, dtype=\"float32\")", "R.Tensor((2, 3), dtype=\"float32\")"),
]


@pytest.mark.parametrize("params, expr, ret", REFERENCE_CASES, ids=[c[1].split("(")[0] for c in REFERENCE_CASES])
def test_references_compute_the_same_under_a_device_namespace(params, expr, ret):
    text = (f"@I.ir_module\nclass Module:\n    @R.function\n    def main({params}) -> {ret}:\n"
            f"        with R.dataflow():\n            y: {ret} = {expr}\n            R.output(y)\n        return y\n")
    call = _call(text)
    assert isinstance(call, Call) and isinstance(call.op, Op)
    fn = bound_reference(call)
    rng = np.random.default_rng(0)

    def value(arg):
        if hasattr(arg, "fields"):  # a tuple of tensors
            return [value(f) for f in arg.fields]
        if hasattr(arg, "name_hint"):
            si = arg.struct_info
            return rng.standard_normal(tuple(si.shape)).astype(si.dtype)
        return arg.value  # a PrimValue

    operands = [value(a) for a in call.args]
    expected = fn(*operands)
    ns = DeviceNamespace(_FakeDeviceModule(), special=__import__("scipy.special").special, half_work=None)
    device_operands = [[ns.asarray(o) for o in x] if isinstance(x, list) else
                       ns.asarray(x) if isinstance(x, np.ndarray) else x for x in operands]
    copied = ns.h2d_bytes
    with use_array_module(ns):
        assert array_module() is ns
        actual = fn(*device_operands)
    assert array_module() is np
    assert type(actual) is _DeviceArray  # computed by the device module, not by numpy behind its back
    assert ns.h2d_bytes == copied  # no host array pulled in while computing
    assert actual.dtype == expected.dtype
    np.testing.assert_array_equal(np.asarray(actual), expected)


# --------------------------------------------------------------------------- the runner
def _partition(tmp_path, sample: str, *extra) -> Path:
    out = tmp_path / Path(sample).stem
    res = run_cli("partition", SAMPLES / sample, "--backend", "cutlass", *extra, "-o", out)
    assert res.exit_code == 0, res.output
    return out


def _runner(folder: Path, device, lib) -> DeviceRunner:
    return DeviceRunner(folder, device, codegen_module(str(folder)), lib=lib,
                        partitioned=lambda: partitioned_module(str(folder)))


class FakeLibrary:
    """The built library's Python face, computing each function from the partitioned module
    (what the CUDA code is checked against on the GPU); records the ``out=`` it was given."""

    def __init__(self, folder: Path):
        manifest = json.loads((folder / "manifest.json").read_text())
        self.functions = {f["symbol"]: f for f in manifest["functions"] if not f.get("status")}
        part = partitioned_module(folder)
        self._interp = Interpreter(part)
        self._funcs = {f.attrs.get("global_symbol", n): f for n, f in part.items()
                       if hasattr(f, "attrs") and f.attrs.get("Codegen")}
        self.calls: list = []
        self.scratch_calls: list = []

    def __getitem__(self, symbol):
        def call(*args, out=None, scratch=None):
            for a in args:
                assert a.flags.c_contiguous, f"{symbol} got a strided argument"
            if scratch is not None:  # planned in the arena: it overlaps no operand and no output
                need = self.functions[symbol].get("scratch_bytes")
                assert scratch.nbytes == need, (scratch.nbytes, need)
                lo = scratch.__array_interface__["data"][0]
                for t in [*args, *([] if out is None else (out if isinstance(out, (list, tuple)) else [out]))]:
                    a = t.__array_interface__["data"][0]
                    assert a + t.nbytes <= lo or lo + scratch.nbytes <= a, f"{symbol}: scratch overlaps a tensor"
                self.scratch_calls.append(symbol)
            host = [np.asarray(a).view(np.ndarray) for a in args]
            with use_array_module(np):  # what the CUDA code does, computed on the host
                value = self._interp.call(Closure(self._funcs[symbol], symbol), host)
            self.calls.append((symbol, out))
            if out is None:
                return value
            out[...] = value
            return out

        return call


@pytest.mark.parametrize("sample, extra", [("mlp_fp16.relax", ()), ("conv2d_nhwc_fp16.relax", ()),
                                           ("small_cnn.onnx", ("--layout", "NHWC", "--fold-batch-norm"))])
def test_runner_matches_the_interpreter_with_outputs_in_the_planned_arena(tmp_path, sample, extra):
    folder = _partition(tmp_path, sample, *extra)
    lib = FakeLibrary(folder)
    runner = _runner(folder, HostDevice(), lib)
    args = bind_arguments(runner.func, random_arguments(runner.func, 3))
    expected = Interpreter(partitioned_module(folder)).run(args)
    dev_args = runner.upload(args)
    assert runner.device.h2d_bytes == sum(a.nbytes for a in args)
    result, summary = runner.run(dev_args)
    assert all(r["ok"] for r in compare(expected, result, DEVICE_TOLERANCES))
    assert all(r["max_abs"] == 0 for r in compare(expected, result))  # same references, same numbers
    # every native output was written in place, into the arena at its planned offset
    assert lib.calls and all(out is not None for _, out in lib.calls)
    arena = runner._arena
    base = arena.__array_interface__["data"][0]
    planned = sorted(off for key, (off, _) in runner.plan.offsets.items() if key[1] != "scratch")
    used = sorted(out.__array_interface__["data"][0] - base for _, out in lib.calls)
    assert used == planned and all(np.shares_memory(out, arena) for _, out in lib.calls)
    # and each static scratch too (the fake checks it overlaps none of the call's tensors)
    with_scratch = {f["symbol"] for f in lib.functions.values() if (f.get("scratch_bytes") or 0) > 0}
    assert sorted(lib.scratch_calls) == sorted(s for s, _ in lib.calls if s in with_scratch)
    # the summary: one row per native function and host operator, nothing moved in the run
    natives = {s for s, _ in lib.calls}
    assert natives <= {r["name"] for r in summary.functions if r["kind"] == "native"}
    assert summary.h2d_run == 0 and summary.d2h_run == 0
    assert summary.plan["arena_bytes"] == runner.plan.arena_bytes
    # a second run on the same inputs gives the same result (the arena is reused, not stale)
    again, _ = runner.run(dev_args)
    assert all(r["max_abs"] == 0 for r in compare(result, again))


def test_runner_runs_functions_without_code_from_the_partitioned_module(tmp_path):
    folder = _partition(tmp_path, "mlp_fp16.relax")
    manifest = json.loads((folder / "manifest.json").read_text())
    dropped = manifest["functions"][0]["symbol"]
    manifest["functions"][0]["status"] = "no_code"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    lib = FakeLibrary(folder)
    assert dropped not in lib.functions
    runner = _runner(folder, HostDevice(), lib)
    args = bind_arguments(runner.func, random_arguments(runner.func, 0))
    result, summary = runner.run(runner.upload(args))
    expected = Interpreter(partitioned_module(folder)).run(args)
    assert all(r["max_abs"] == 0 for r in compare(expected, result))
    assert dropped not in {s for s, _ in lib.calls}
    assert any(dropped in n for n in summary.notes)


# --------------------------------------------------------------------------- the command line
@pytest.fixture
def no_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError


@pytest.mark.parametrize("command", [["run"], ["verify"], ["bench"]])
def test_without_cupy_a_device_command_says_so_with_exit_code_3(tmp_path, no_cupy, command):
    folder = _partition(tmp_path, "mlp_fp16.relax")
    args = [*command, folder] + ([] if command == ["bench"] else ["--device", "cuda"])
    res = run_cli(*args)
    assert res.exit_code == 3, res.output
    assert "--device cuda needs CuPy" in res.output and "Traceback" not in res.output


def test_device_run_of_a_model_file_is_a_usage_error(no_cupy):
    res = run_cli("run", SAMPLES / "mlp_fp16.relax", "--device", "cuda")
    assert res.exit_code == 2 and "runs a built folder" in res.output


def test_unknown_device_and_graph_on_cpu_are_errors(tmp_path):
    folder = _partition(tmp_path, "mlp_fp16.relax")
    res = run_cli("run", folder, "--device", "tpu")
    assert res.exit_code == 2 and "unknown device 'tpu'" in res.output
    res = run_cli("run", folder, "--cuda-graph")
    assert res.exit_code == 2 and "--device cuda" in res.output


def test_cpu_run_of_a_folder_interprets_its_partitioned_module(tmp_path):
    folder = _partition(tmp_path, "mlp_fp16.relax")
    a = run_cli("run", folder, "--random-inputs", "2", "-o", tmp_path / "a.npz")
    b = run_cli("run", SAMPLES / "mlp_fp16.relax", "--random-inputs", "2", "-o", tmp_path / "b.npz")
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    with np.load(tmp_path / "a.npz") as x, np.load(tmp_path / "b.npz") as y:
        np.testing.assert_allclose(x["output_0"].astype(np.float64), y["output_0"].astype(np.float64), rtol=1e-2, atol=1e-2)


def test_compare_names_the_first_differing_element():
    exp = np.zeros((2, 3), np.float32)
    act = exp.copy()
    act[1, 2] = 1.0
    act[1, 1] = 0.5
    (rec,) = compare(exp, act, DEVICE_TOLERANCES)
    assert not rec["ok"] and rec["first_bad"] == {"index": (1, 1), "expected": 0.0, "actual": 0.5}
    assert rec["mismatches"] == 2 and (rec["rtol"], rec["atol"]) == DEVICE_TOLERANCES["float32"]


def test_references_import_numpy_only_for_dtype_helpers():
    """A reference that imported numpy itself would compute on the host during a device run."""
    import ast

    allowed = {"np_dtype", "dtype_name", "is_float_dtype"}
    for name in ("reference.py", "reference_tensor.py", "reference_nn.py", "reference_image.py"):
        tree = ast.parse((ROOT / "byocc" / "ops" / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name not in allowed:
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        names = [a.name for a in inner.names]
                        assert "numpy" not in names and getattr(inner, "module", None) != "numpy", (name, node.name)
                    assert not (isinstance(inner, ast.Name) and inner.id == "np"), (name, node.name, inner.lineno)


# --------------------------------------------------------------------------- commands on a stand-in device
@pytest.fixture
def stand_in(monkeypatch):
    """``--device cuda`` opens the numpy stand-in and loads the Python stand-in library;
    ``state["perturb"]`` (a symbol) makes that function's output wrong."""
    import byocc.runtime.device as device_mod
    import byocc.runtime.native as native_mod

    state: dict = {}

    class Perturbing(FakeLibrary):
        def __getitem__(self, symbol):
            inner = super().__getitem__(symbol)

            def call(*args, out=None, scratch=None):
                value = inner(*args, out=out, scratch=scratch)
                if state.get("perturb") == symbol:
                    value.reshape(-1)[-1] += 100
                return value

            return call

    monkeypatch.setattr(device_mod, "open_device", lambda kind: HostDevice())
    monkeypatch.setattr(native_mod, "load", lambda folder: Perturbing(Path(folder)))
    return state


def test_run_on_the_stand_in_writes_outputs_and_the_summary(tmp_path, stand_in):
    folder = _partition(tmp_path, "small_cnn.onnx", "--layout", "NHWC", "--fold-batch-norm")
    res = run_cli("run", folder, "--device", "cuda", "--random-inputs", "1", "-o", tmp_path / "o.npz",
                  "--summary", tmp_path / "s.json")
    assert res.exit_code == 0, res.output
    cpu = run_cli("run", folder, "--random-inputs", "1", "-o", tmp_path / "c.npz")
    assert cpu.exit_code == 0
    with np.load(tmp_path / "o.npz") as a, np.load(tmp_path / "c.npz") as b:
        np.testing.assert_array_equal(a["output_0"], b["output_0"])
    summary = json.loads((tmp_path / "s.json").read_text())
    kinds = {r["name"]: r["kind"] for r in summary["functions"]}
    assert kinds["relax.nn.max_pool2d"] == "host op" and kinds["fused_relax_matmul_relax_add_cutlass"] == "native"
    assert all(r["host_ms"] > 0 and r["calls"] >= 1 for r in summary["functions"])
    assert summary["h2d_run"] == 0 and summary["h2d_inputs"] == 1 * 3 * 32 * 32 * 4
    assert summary["plan"]["buffers"] == 6 and summary["d2h_outputs"] == 10 * 4
    assert "host->device: inputs 12.0 KiB" in res.output and "allocation plan: 6 native outputs" in res.output


def test_verify_on_the_stand_in_passes_and_names_the_first_differing_element(tmp_path, stand_in):
    folder = _partition(tmp_path, "mlp_fp16.relax")
    ok = run_cli("verify", folder, "--device", "cuda", "--trials", "2")
    assert ok.exit_code == 0 and "ok: the built library on cuda" in ok.output, ok.output
    stand_in["perturb"] = "fused_relax_matmul_relax_add_cutlass"  # the last layer: the output's last element
    bad = run_cli("verify", folder, "--device", "cuda", "--trials", "2")
    assert bad.exit_code == 1, bad.output
    import re

    assert re.search(r"error: output_0 differs beyond rtol/atol 0\.01/[0-9.]+ \(seed 0\); first differs at index "
                     r"\[15, 9\]: expected [-0-9.]+, got [-0-9.]+", bad.output), bad.output
    assert re.search(r"MISMATCH \(seed [01], 1 elements\)", bad.output)


def test_verify_against_the_fp32_original_of_a_float16_partition(tmp_path, stand_in):
    """``--against MODEL``: the model `partition --dtype float16` read, in fp32 on the CPU, is
    the reference; the built float16 code passes at float16's tolerance, a wrong function
    fails, a model of other inputs is refused with one located error."""
    folder = _partition(tmp_path, "small_cnn.onnx", "--layout", "NHWC", "--fold-batch-norm", "--dtype", "float16")
    onnx_model = SAMPLES / "small_cnn.onnx"
    ok = run_cli("verify", folder, "--device", "cuda", "--trials", "1", "--against", onnx_model)
    assert ok.exit_code == 0, ok.output
    assert f"{onnx_model} on the CPU" in ok.output and "computes in float16" in ok.output
    stand_in["perturb"] = "fused_relax_matmul_relax_add_cutlass"
    bad = run_cli("verify", folder, "--device", "cuda", "--trials", "1", "--against", onnx_model)
    assert bad.exit_code == 1 and "error: output_0 differs" in bad.output, bad.output
    stand_in.clear()
    other = run_cli("verify", folder, "--device", "cuda", "--against", SAMPLES / "mlp_fp16.relax")
    assert other.exit_code != 0 and other.output.count("error:") == 1 and "input" in other.output, other.output
    cpu = run_cli("verify", SAMPLES / "mlp_fp16.relax", "--backend", "cutlass", "--against", onnx_model)
    assert cpu.exit_code == 2 and "--against" in cpu.output


def test_bench_on_the_stand_in_prints_json(tmp_path, stand_in):
    folder = _partition(tmp_path, "mlp_fp16.relax")
    res = run_cli("bench", folder, "--warmup", "1", "--iters", "3", "--no-cuda-graph", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output[res.output.index("{"):])
    (row,) = doc["results"]
    assert row["impl"] == "byocc" and row["mode"] == "eager" and row["h2d_per_call"] == 0
    assert doc["batch"] == 16 and row["median_ms"] > 0 and row["throughput"] > 0


class _FakeDevice(HostDevice):
    """The stand-in with device arrays of their own type, through a DeviceNamespace: a host
    array that reaches the references during the run is counted as a host-to-device copy."""

    name = "fake device"

    def __init__(self):
        super().__init__()
        self.xp = DeviceNamespace(_FakeDeviceModule(), special=__import__("scipy.special").special)

    def upload(self, array):
        self.h2d_bytes += int(array.nbytes)
        return np.array(array, copy=True).view(_DeviceArray)

    def empty_bytes(self, nbytes):
        return np.zeros(max(int(nbytes), 1), dtype=np.uint8).view(_DeviceArray)


def test_runner_pulls_no_host_array_into_the_run(tmp_path):
    folder = _partition(tmp_path, "small_cnn.onnx", "--layout", "NHWC", "--fold-batch-norm")
    runner = _runner(folder, _FakeDevice(), FakeLibrary(folder))
    args = bind_arguments(runner.func, random_arguments(runner.func, 5))
    result, summary = runner.run(runner.upload(args))
    assert type(result) is _DeviceArray
    assert summary.h2d_run == 0 and runner.device.xp.h2d_copies == 0
    expected = Interpreter(partitioned_module(folder)).run(args)
    assert all(r["max_abs"] == 0 for r in compare(expected, np.asarray(result)))


def test_device_compare_scales_atol_by_the_output_magnitude():
    """fp16 outputs of magnitude 1000 that cancel to ~1 in one element: a rounding difference
    of 0.25 there is noise at the output's scale, an error of 20 is not."""
    exp = np.array([1000.0, -800.0, 1.5], np.float16)
    close = np.array([1000.0, -800.0, 1.25], np.float16)
    far = np.array([1000.0, -800.0, 21.5], np.float16)
    (plain,) = compare(exp, close, DEVICE_TOLERANCES)
    (scaled,) = compare(exp, close, DEVICE_TOLERANCES, scale_atol=True)
    (wrong,) = compare(exp, far, DEVICE_TOLERANCES, scale_atol=True)
    assert not plain["ok"] and scaled["ok"] and scaled["atol"] == pytest.approx(10.0)
    assert not wrong["ok"] and wrong["first_bad"]["index"] == (2,)


def test_a_capture_failure_names_the_binding(tmp_path):
    import contextlib

    from byocc.runtime.device import GraphCaptureError

    class Capturing(HostDevice):
        @contextlib.contextmanager
        def capture(self):
            out: list = []
            yield out
            out.extend(["graph", []])

    class Refusing(FakeLibrary):
        def __getitem__(self, symbol):
            def call(*args, out=None, scratch=None):
                raise RuntimeError("the current stream is capturing, so H2D transfers are disallowed")

            return call

    folder = _partition(tmp_path, "mlp_fp16.relax")
    runner = _runner(folder, Capturing(), Refusing(folder))
    args = runner.upload(bind_arguments(runner.func, random_arguments(runner.func, 0)))
    with pytest.raises(GraphCaptureError, match=r"cannot capture the run as one CUDA graph at 'lv' "
                                                r"\(fused_relax_matmul_relax_add_relax_nn_relu_cutlass\): the current"):
        runner.capture(args)


def test_verify_judges_a_float16_model_by_float16_even_where_its_outputs_are_float32(tmp_path):
    """``partition --dtype float16`` keeps the fp32 interface of an fp32 ONNX model but
    computes in float16: verify --device must hold its float32 outputs to float16's tolerance
    (the H200 run of ResNet-50 failed at float32's 1e-4 with a relative error of 3e-3)."""
    from byocc.runtime.inputs import compute_dtype

    plain = _partition(tmp_path / "plain", "small_cnn.onnx", "--layout", "NHWC")
    half = _partition(tmp_path / "half", "small_cnn.onnx", "--layout", "NHWC", "--dtype", "float16")
    assert compute_dtype(partitioned_module(str(plain))) == "float32"
    assert compute_dtype(partitioned_module(str(half))) == "float16"
    exp = np.array([24.2969, -3.0, 0.5], np.float32)
    off = np.array([24.2812, -3.0, 0.5], np.float32)  # float16 rounding of a long sum
    (as_f32,) = compare(exp, off, DEVICE_TOLERANCES, scale_atol=True, floor="float32")
    (as_f16,) = compare(exp, off, DEVICE_TOLERANCES, scale_atol=True, floor="float16")
    assert not as_f32["ok"] and as_f32["tol_dtype"] == "float32"
    assert as_f16["ok"] and as_f16["tol_dtype"] == "float16" and as_f16["dtype"] == "float32"
    wrong = np.array([24.2969, -3.0, 3.5], np.float32)
    (bad,) = compare(exp, wrong, DEVICE_TOLERANCES, scale_atol=True, floor="float16")
    assert not bad["ok"] and bad["first_bad"]["index"] == (2,)


class _NoReadBack(_DeviceArray):
    """A device array whose reductions to a Python value fail, as a read-back does while a
    CUDA graph is being captured."""

    def __bool__(self):
        raise RuntimeError("the current stream is capturing, so D2H transfers are disallowed")


class _CapturingModule(_FakeDeviceModule):
    array_class = _NoReadBack


def test_take_reads_nothing_back_from_the_device_and_checks_indices_on_the_host():
    """BERT's embedding lookup (relax.take) stopped ``run --cuda-graph`` on the H200: its
    bounds check read the indices back. On a device the indices are clipped instead; on the
    host an index out of range is still an error."""
    text = ('@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((5, 3), dtype="float32"), '
            'i: R.Tensor((2, 2), dtype="int64")) -> R.Tensor((2, 2, 3), dtype="float32"):\n'
            '        with R.dataflow():\n            y: R.Tensor((2, 2, 3), dtype="float32") = R.take(x, i, axis=0)\n'
            '            R.output(y)\n        return y\n')
    fn = bound_reference(_call(text))
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    idx = np.array([[0, 4], [-1, 2]], np.int64)
    expected = fn(x, idx)
    np.testing.assert_array_equal(expected, x[[[0, 4], [4, 2]]])
    with pytest.raises(IndexError, match="out of range"):
        fn(x, np.array([[0, 5], [1, 2]], np.int64))
    ns = DeviceNamespace(_CapturingModule())
    with use_array_module(ns):
        actual = fn(ns.asarray(x), ns.asarray(idx))
        clipped = fn(ns.asarray(x), ns.asarray(np.array([[0, 7], [1, 2]], np.int64)))
    np.testing.assert_array_equal(np.asarray(actual), expected)
    np.testing.assert_array_equal(np.asarray(clipped)[0, 1], x[4])


def test_half_precision_operators_compute_in_float32_on_a_device():
    """A float16 host operator on the GPU (Llama's SiLU: 0.79 ms in float64 on the H200) does
    its math in float32, as the kernels do; float32 operands keep float64; the host keeps
    float64 for everything. The result stays within one float16 rounding of the host's."""
    from byocc.ops.reference import work_dtype

    ns = DeviceNamespace(_FakeDeviceModule(), special=__import__("scipy.special").special)
    assert work_dtype(np.float16) == np.float64
    with use_array_module(ns):
        assert work_dtype(np.float16) == np.float32 and work_dtype(np.float32) == np.float64
    text = ('@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((64, 300), dtype="float16")) '
            '-> R.Tensor((64, 300), dtype="float16"):\n        with R.dataflow():\n'
            '            y: R.Tensor((64, 300), dtype="float16") = R.nn.silu(x)\n            R.output(y)\n        return y\n')
    fn = bound_reference(_call(text))
    x = (np.random.default_rng(3).standard_normal((64, 300)) * 4).astype(np.float16)
    host = fn(x)
    with use_array_module(ns):
        dev = np.asarray(fn(ns.asarray(x)))
    assert dev.dtype == np.float16
    ulp = np.spacing(np.abs(host).astype(np.float16)).astype(np.float64)
    assert np.all(np.abs(dev.astype(np.float64) - host.astype(np.float64)) <= ulp)


class _KernelModule(_FakeDeviceModule):
    """A device module with CuPy's ``ElementwiseKernel``: the kernel's CUDA expression is
    evaluated in numpy float32 (expf -> exp, ...), so the formulas themselves are checked."""

    made: list = []

    def ElementwiseKernel(self, in_params, out_params, body, name):  # noqa: N802 - CuPy's name
        import re

        import scipy.special

        assert in_params == "float16 x" and out_params == "float16 y" and name.startswith("byocc_half_")
        expr = re.search(r"y = static_cast<float16>\((.*)\);$", body)[1]
        py = re.sub(r"(\d\.\d*)f\b", r"\1", expr)
        py = py.replace("expf", "np.exp").replace("erfcf", "erfc")
        self.made.append(name)

        def kernel(x):
            v = np.asarray(x).astype(np.float32)
            with np.errstate(over="ignore"):
                out = eval(py, {"np": np, "erfc": lambda a: scipy.special.erfc(a).astype(np.float32), "v": v})  # noqa: S307
            return np.asarray(out, np.float32).astype(np.float16).view(_DeviceArray)

        return kernel


@pytest.mark.parametrize("op", ["nn.silu", "sigmoid", "nn.gelu", "nn.gelu_tanh"])
def test_half_activations_run_as_one_kernel_and_compute_what_the_reference_does(op):
    """On the GPU a float16 SiLU/GELU/sigmoid is one kernel (read, float32 math, write); its
    CUDA formula gives the host reference's result within one float16 rounding."""
    text = ('@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((64, 300), dtype="float16")) '
            '-> R.Tensor((64, 300), dtype="float16"):\n        with R.dataflow():\n'
            f'            y: R.Tensor((64, 300), dtype="float16") = R.{op}(x)\n            R.output(y)\n        return y\n')
    fn = bound_reference(_call(text))
    x = (np.random.default_rng(4).standard_normal((64, 300)) * 6).astype(np.float16)
    host = fn(x).astype(np.float64)
    module = _KernelModule()
    module.made.clear()
    ns = DeviceNamespace(module, special=__import__("scipy.special").special)
    with use_array_module(ns):
        dev = fn(ns.asarray(x))
        again = fn(ns.asarray(x))
    assert len(module.made) == 1  # one kernel, built once
    assert dev.dtype == np.float16 and np.array_equal(np.asarray(dev), np.asarray(again))
    ulp = np.spacing(np.abs(host).astype(np.float16)).astype(np.float64)
    assert np.all(np.abs(np.asarray(dev).astype(np.float64) - host) <= ulp)
    host32 = fn(x.astype(np.float32))
    with use_array_module(ns):
        dev32 = fn(ns.asarray(x.astype(np.float32)))  # float32: the usual path, float64 math
    np.testing.assert_array_equal(np.asarray(dev32), host32)
    assert len(module.made) == 1


def test_a_half_kernel_that_fails_to_build_falls_back_to_the_generic_path():
    class Broken(_FakeDeviceModule):
        def ElementwiseKernel(self, *args):  # noqa: N802 - CuPy's name
            def kernel(x):
                raise RuntimeError("nvrtc: error: identifier erfcf is undefined")
            return kernel

    text = ('@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((8, 8), dtype="float16")) '
            '-> R.Tensor((8, 8), dtype="float16"):\n        with R.dataflow():\n'
            '            y: R.Tensor((8, 8), dtype="float16") = R.nn.gelu(x)\n            R.output(y)\n        return y\n')
    fn = bound_reference(_call(text))
    x = np.linspace(-4, 4, 64, dtype=np.float16).reshape(8, 8)
    ns = DeviceNamespace(Broken(), special=__import__("scipy.special").special)
    with use_array_module(ns):
        first = np.asarray(fn(ns.asarray(x)))
        second = np.asarray(fn(ns.asarray(x)))
    assert len(ns.kernel_failures) == 1 and "erfcf" in ns.kernel_failures[0]
    ulp = np.spacing(np.abs(fn(x)).astype(np.float16)).astype(np.float64)
    assert np.all(np.abs(first.astype(np.float64) - fn(x).astype(np.float64)) <= ulp)
    np.testing.assert_array_equal(first, second)


# --------------------------------------------------------------------------- one-kernel max pooling
_WINDOW_MAX_HARNESS = r"""
#include <cstdio>
#include <cstdlib>
// the kernel body of byocc.ops.xp.WINDOW_MAX_BODY, compiled on the host: one output element an
// iteration, as CuPy's ElementwiseKernel runs it one a thread
int main(int argc, char** argv) {
  long long p[17];
  for (int k = 0; k < 17; ++k) p[k] = atoll(argv[3 + k]);
  const long long d0 = p[0], d1 = p[1], d2 = p[2], d3 = p[3], o1 = p[4], o2 = p[5], o3 = p[6], ah = p[7], aw = p[8];
  const long long kh = p[9], kw = p[10], sh = p[11], sw = p[12], dh = p[13], dw = p[14], ph = p[15], pw = p[16];
  const long long n_in = d0 * d1 * d2 * d3, n_out = atoll(argv[20]);
  T* x = new T[n_in];
  T* out = new T[n_out];
  FILE* f = fopen(argv[1], "rb");
  if (!f || fread(x, sizeof(T), n_in, f) != (size_t)n_in) return 2;
  fclose(f);
  const T lowest = -1.0 / 0.0;
  for (long long i = 0; i < n_out; ++i) {
    T y;
    {
@@BODY@@
    }
    out[i] = y;
  }
  f = fopen(argv[2], "wb");
  fwrite(out, sizeof(T), n_out, f);
  fclose(f);
  return 0;
}
"""


@pytest.fixture(scope="module")
def window_max_harness(tmp_path_factory):
    """The kernel body compiled with g++ for float and double: the fake ElementwiseKernel runs it."""
    import shutil
    import subprocess

    from byocc.ops.xp import WINDOW_MAX_BODY

    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    d = tmp_path_factory.mktemp("window_max")
    exes = {}
    for ctype, dt in (("float", np.float32), ("double", np.float64)):
        src = d / f"harness_{ctype}.cc"
        src.write_text(f"typedef {ctype} T;\n" + _WINDOW_MAX_HARNESS.replace("@@BODY@@", WINDOW_MAX_BODY))
        exe = d / f"harness_{ctype}"
        proc = subprocess.run(["g++", "-O1", "-o", str(exe), str(src)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        exes[np.dtype(dt)] = exe
    return d, exes


class _HarnessKernelModule(_FakeDeviceModule):
    """A device module whose ``ElementwiseKernel`` runs the max-pool body compiled on the host."""

    def __init__(self, harness):
        self.dir, self.exes = harness
        self.launches = 0

    def ElementwiseKernel(self, in_params, out_params, body, name):  # noqa: N802 - CuPy's name
        import subprocess

        from byocc.ops.xp import WINDOW_MAX_BODY
        from byocc.ops.xp import WINDOW_MAX_PARAMS

        assert (in_params, out_params, body, name) == (WINDOW_MAX_PARAMS, "T y", WINDOW_MAX_BODY, "byocc_window_max")

        def kernel(x, lowest, *rest):
            *params, out = rest
            assert np.isneginf(lowest) and len(params) == 17 and out.dtype == x.dtype
            self.launches += 1
            work = np.dtype(np.float32) if x.dtype == np.float16 else x.dtype  # float16 values are exact in float
            np.ascontiguousarray(x, dtype=work).tofile(self.dir / "x.bin")
            proc = subprocess.run([str(self.exes[work]), str(self.dir / "x.bin"), str(self.dir / "y.bin"),
                                   *map(str, params), str(out.size)], capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr
            out[...] = np.fromfile(self.dir / "y.bin", dtype=work).reshape(out.shape).astype(out.dtype)
            return out

        return kernel


def test_max_pool_on_the_device_is_one_kernel_that_computes_the_window_maximum(window_max_harness):
    """On the GPU a float max_pool2d is one kernel (``DeviceNamespace.window_max``) instead of
    a launch a window tap: its CUDA body (compiled here on the host) gives what the running
    maximum gives on numpy, for NCHW and NHWC, padding, dilation, ceil mode, NaN and windows
    wholly in the padding; float64 too."""
    from byocc.ops.reference_nn import _pool

    ref = _pool("max")
    rng = np.random.default_rng(7)
    module = _HarnessKernelModule(window_max_harness)
    ns = DeviceNamespace(module)
    checked = 0
    for x, layout, ks, st, dl, pad, ceil in random_max_pools(rng, 40, [np.float16, np.float32, np.float64], 0.3, 9):
        xl = x if layout == "NCHW" else x.transpose(0, 2, 3, 1).copy()
        want = ref(xl, ks, st, dl, pad, ceil, False, layout)
        before = module.launches
        with use_array_module(ns):
            got = ref(ns.asarray(xl), ks, st, dl, pad, ceil, False, layout)
        assert module.launches == before + 1  # one kernel, not one a tap
        assert type(got) is _DeviceArray and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), want)
        checked += 1
    assert checked > 25 and not ns.kernel_failures
