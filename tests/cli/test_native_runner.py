"""The native runner (spec/backends.md 17.4) without a GPU: the light library that
``byocc build`` makes from tests/cli/test_build_cli.py's fixture is loaded with ctypes; its
argument checks run on the host, so CPU tensors (numpy through its own DLPack capsule) and
fake ``__cuda_array_interface__`` tensors reach the C code and come back as
ByoccRuntimeError with byocc_last_error()'s text."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from test_build_cli import requires_nvcc
from test_build_cli import tiny_entry
from test_build_cli import write_tiny_library

from byocc.ir import InputError
from byocc.runtime import native
from byocc.runtime.build import build
from byocc.runtime.dlpack import DTYPES
from byocc.runtime.dlpack import TensorSlots
from byocc.runtime.dlpack import capsule_tensor
from byocc.runtime.dlpack import dltensor
from byocc.runtime.native import ByoccRuntimeError
from byocc.runtime.native import load

pytestmark = requires_nvcc


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("native")
    lib_dir = write_tiny_library(root / "out")
    build(lib_dir, cache_dir=str(tmp_path_factory.getbasetemp() / "native-objcache"))
    return lib_dir


@pytest.fixture
def lib(built):
    return load(built)


class FakeCuda:
    """A tensor that only describes itself (``__cuda_array_interface__``, version 3)."""

    def __init__(self, shape, typestr="<f4", ptr=1 << 20, strides=None):
        self.shape = tuple(shape)
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3}


def test_load_checks_the_abi_and_lists_the_functions(lib, built):
    assert lib.abi_version() == 1
    assert list(lib.functions) == ["f", "g"] and "f" in lib and list(lib) == ["f", "g"]
    assert lib.functions["f"]["num_args"] == 2
    assert repr(lib) == f"<byocc library {built / 'lib' / 'libbyocc_tiny.so'} (2 functions)>"
    assert repr(lib["f"]) == "<byocc function f (1 inputs)>"
    assert lib["f"] is lib["f"]  # cached
    with pytest.raises(KeyError, match=r"'h' is not a function of libbyocc_tiny.so \(functions: f, g\)"):
        lib["h"]


def test_cpu_tensor_returns_the_layout_error_with_its_message(lib):
    x = np.arange(6, dtype=np.float32)
    with pytest.raises(ByoccRuntimeError) as info:
        lib["f"](x)
    err = info.value
    assert (err.code, err.name, err.symbol) == (4, "E_LAYOUT", "f")
    assert err.detail == "argument 0 (x) is not a CUDA tensor (device type 1)"
    assert str(err) == "f: E_LAYOUT (4): argument 0 (x) is not a CUDA tensor (device type 1)"
    assert lib.last_error() == err.detail
    assert err.exit_code == 3
    lib.synchronize()  # host tensors only: nothing to wait for


def test_output_shapes_and_allocation_follow_the_symbols(lib):
    x = np.zeros(5, dtype=np.float32)
    assert lib["f"].output_shapes(x) == ((5,),)
    (out,) = lib["f"].allocate_outputs(x)
    assert out.shape == (5,) and out.dtype == np.float32


def test_checks_on_fake_cuda_tensors(lib):
    f = lib["f"]
    with pytest.raises(ByoccRuntimeError, match=r"^f: E_DTYPE \(2\): argument 0 \(x\) has dtype \(code 2, "
                                                r"bits 16, lanes 1\), expected \(code 2, bits 32, lanes 1\)$"):
        f(FakeCuda((4,), "<f2"), out=FakeCuda((4,)))
    with pytest.raises(ByoccRuntimeError, match=r"^f: E_SHAPE \(3\): argument 1 \(out\) dim 0 = 5, but n = 4 "
                                                r"elsewhere$"):
        f(FakeCuda((4,)), out=FakeCuda((5,)))
    with pytest.raises(ByoccRuntimeError, match=r"^f: E_LAYOUT \(4\): argument 0 \(x\) is not compact"):
        f(FakeCuda((4,), strides=(8,)), out=FakeCuda((4,)))
    with pytest.raises(ByoccRuntimeError, match=r"^f: E_SHAPE \(3\): argument 0 \(x\) has rank 2, expected 1$"):
        f(FakeCuda((2, 2)), out=FakeCuda((4,)))
    with pytest.raises(ByoccRuntimeError, match=r"^f: E_NARGS \(1\): expected 1 input tensors, got 2$"):
        f(FakeCuda((4,)), FakeCuda((4,)), out=FakeCuda((4,)))


def test_host_overhead_is_measured(lib):
    us = lib.host_overhead_us("f", FakeCuda((4,)), out=FakeCuda((4,)), n=200)
    assert 0.0 < us < 10_000.0


def test_bound_constants_are_read_uploaded_and_bound(built, tmp_path):
    other = tmp_path / "withconst"
    shutil.copytree(built, other)
    entry = tiny_entry(constants=[{"name": "w", "dtype": "float32", "shape": [2, 3], "npz": None,
                                   "key": "w"}])
    manifest = json.loads((other / "manifest.json").read_text())
    manifest.update(functions=[entry], constants_file="tiny.constants.npz")
    (other / "manifest.json").write_text(json.dumps(manifest))
    np.savez(other / "tiny.constants.npz", w=np.ones((2, 3), dtype=np.float64))
    lib = load(other)
    # numpy "uploads" stay on the host, so the library refuses the binding: the call got there
    with pytest.raises(ByoccRuntimeError, match=r"^byocc_set_constant: E_LAYOUT \(4\): constant w: not a CUDA "
                                                r"tensor$"):
        lib["f"](np.zeros(3, dtype=np.float32))
    assert lib._uploads[("w", (1, 0))].dtype == np.float32  # converted to the manifest dtype
    np.savez(other / "tiny.constants.npz", v=np.ones(1))
    with pytest.raises(InputError, match=r"constant w: cannot read .*tiny.constants.npz \[w\]"):
        load(other)["f"](np.zeros(3, dtype=np.float32))


def test_abi_mismatch_and_missing_library(built, tmp_path, monkeypatch):
    import byocc.backends.codegen as codegen

    monkeypatch.setattr(codegen, "ABI_VERSION", 2)
    with pytest.raises(ByoccRuntimeError, match=r"E_INTERNAL \(11\): .*has ABI version 1, this byocc calls "
                                                r"version 2$"):
        load(built)
    monkeypatch.undo()
    empty = tmp_path / "nolib"
    shutil.copytree(built, empty)
    shutil.rmtree(empty / "lib")
    with pytest.raises(InputError, match=r"no library \(build it with `byocc build "):
        load(empty)


def test_dlpack_capsule_and_slots():
    x = np.arange(6, dtype=np.float16).reshape(2, 3)
    capsule = x.__dlpack__()
    t = dltensor(capsule_tensor(capsule))
    assert (t.ndim, t.dtype.code, t.dtype.bits, t.device.device_type) == (2, 2, 16, 1)
    assert [t.shape[i] for i in range(2)] == [2, 3]
    slots = TensorSlots(2, 8)
    slots.fill(1, 4096, 2, 3, *DTYPES["bfloat16"], (7, 5), (5, 1))
    s = dltensor(slots.pointers[1])
    assert (s.data, s.device.device_type, s.device.device_id, s.ndim) == (4096, 2, 3, 2)
    assert (s.dtype.code, s.dtype.bits, s.dtype.lanes, s.byte_offset) == (4, 16, 1, 0)
    assert [s.shape[0], s.shape[1], s.strides[0], s.strides[1]] == [7, 5, 5, 1]
    slots.fill(0, 0, 2, 0, 2, 32, tuple(range(1, 11)), None)  # rank above the slot's room
    big = dltensor(slots.pointers[0])
    assert big.ndim == 10 and big.shape[9] == 10 and not big.strides


def test_symbolic_expressions_in_output_shapes():
    resolve = native._dim_resolver("n * 2 + 1", {"n": [[0, 1]]}, 1)
    assert resolve([np.zeros((3, 4))]) == 9
    with pytest.raises(InputError, match="cannot evaluate the output dim"):
        native._dim_resolver("n.__class__", {"n": [[0, 0]]}, 1)


def _fake_torch():
    """A stand-in for the parts of PyTorch the runner uses (no GPU needed)."""
    import types

    torch = types.ModuleType("torch")

    class Device:
        def __init__(self, kind, index):
            self.type, self.index = kind, index

    class Dtype:
        def __init__(self, name):
            self.name = name

        def __str__(self):
            return f"torch.{self.name}"

    class Tensor:
        def __init__(self, shape, dtype, device, ptr=1 << 21, strides=None):
            self.shape, self.dtype, self.device, self._ptr = tuple(shape), dtype, device, ptr
            self._strides = strides or tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))

        def data_ptr(self):
            return self._ptr

        def stride(self):
            return self._strides

    Tensor.__module__ = "torch"
    torch.Tensor = Tensor
    torch.float32, torch.float16, torch.uint8 = Dtype("float32"), Dtype("float16"), Dtype("uint8")
    allocations = []

    def empty(shape, dtype, device):
        allocations.append(tuple(shape))
        return Tensor(shape, dtype, device, ptr=(1 << 22) * len(allocations))

    torch.empty = empty
    torch.allocations = allocations
    streams = []

    class _Cuda:
        @staticmethod
        def current_stream(index):
            streams.append(index)
            return types.SimpleNamespace(cuda_stream=0)

        @staticmethod
        def synchronize(index):
            streams.append(("sync", index))

    torch.cuda = _Cuda
    torch.device = Device
    return torch, streams


def test_torch_tensors_are_described_from_their_attributes(lib, monkeypatch):
    import sys

    torch, streams = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    cuda = torch.device("cuda", 0)
    x = torch.Tensor((8,), torch.float32, cuda)
    # every host check passes, so the wrapper launches: without a GPU the launch fails
    with pytest.raises(ByoccRuntimeError) as info:
        lib["f"](x)
    assert info.value.name == "E_CUDA" and info.value.detail.startswith("f: ")
    assert streams == [0]  # the current stream of the inputs' device
    with pytest.raises(ByoccRuntimeError, match=r"E_DTYPE \(2\): argument 1 \(out\) has dtype \(code 2, bits 16"):
        lib["f"](x, out=torch.Tensor((8,), torch.float16, cuda))
    with pytest.raises(ByoccRuntimeError, match=r"E_LAYOUT \(4\): argument 1 \(out\) is on device 1, argument 0 "
                                                r"on device 0"):
        lib["f"](x, out=torch.Tensor((8,), torch.float32, torch.device("cuda", 1)))
    with pytest.raises(ByoccRuntimeError, match=r"E_LAYOUT \(4\): argument 0 \(x\) is not compact row-major"):
        lib["f"](torch.Tensor((8,), torch.float32, cuda, strides=(2,)))
    (out,) = lib["f"].allocate_outputs(x)
    assert (out.shape, out.dtype, out.device) == ((8,), torch.float32, cuda)


def test_scratch_is_queried_grown_per_stream_and_reused(lib, monkeypatch):
    import sys

    torch, streams = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    cuda = torch.device("cuda", 0)

    def call(n, stream=None):
        x = torch.Tensor((n,), torch.float32, cuda)
        with pytest.raises(ByoccRuntimeError) as info:  # past the scratch check: the launch fails
            lib["g"](x, out=torch.Tensor((n,), torch.float32, cuda), stream=stream)
        assert info.value.name == "E_CUDA", info.value

    call(1000)
    assert torch.allocations == [(1 << 20,)]  # 4000 bytes, rounded up to a whole MiB
    call(2000)
    assert torch.allocations == [(1 << 20,)]  # reused
    call(400_000)  # 1.6 MB: grown (at least doubled), the old buffer kept until synchronize()
    assert torch.allocations == [(1 << 20,), (2 << 20,)]
    assert len(lib._retired) == 1
    call(1000, stream=7)  # another stream gets its own buffer
    assert torch.allocations[-1] == (1 << 20,) and len(torch.allocations) == 3
    lib.synchronize()
    assert lib._retired == [] and ("sync", 0) in streams
    with pytest.raises(ByoccRuntimeError, match=r"^f: E_CUDA"):
        lib["f"](torch.Tensor((4,), torch.float32, cuda))  # no scratch: none allocated
    assert len(torch.allocations) == 4  # only its output
