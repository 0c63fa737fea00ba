"""Input files (issue 9, class 3): every command reads the same kinds of MODEL the same way.

- a module without its sidecar parses and checks (constants of unknown type fit every op);
- a sidecar that does not fit (wrong shape or dtype, missing or extra array) is one error
  naming the array's key;
- ``partition``/``show``/``check`` import an ``.onnx`` MODEL as ``run``/``verify`` do;
- a byte-order mark, CRLF line ends and non-ASCII identifiers are accepted;
- stdin closed, binary input (file or stdin) and binary pattern files are clean errors;
- printing a module to stdout says on stderr that constant values are not in the text;
- ONNX models import at every opset up to the installed onnx's; string tensors and TIR
  functions are refused with a message saying what they are.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli as run

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SEED = SAMPLES / "seed.relax"
SEED_PATTERNS = SAMPLES / "seed_patterns.py"
ONNX_MODELS = ["small_cnn.onnx", "small_encoder.onnx"]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """Each ONNX sample imported once: {stem: (relax path, sidecar arrays)}."""
    out = {}
    folder = tmp_path_factory.mktemp("imported")
    for name in ONNX_MODELS:
        stem = Path(name).stem
        target = folder / f"{stem}.relax"
        result = run("import", SAMPLES / name, "-o", target)
        assert result.exit_code == 0, result.output
        with np.load(folder / f"{stem}.npz") as npz:
            out[stem] = (target, {k: npz[k] for k in npz.files})
    return out


# --------------------------------------------------------------------------- no sidecar
@pytest.mark.parametrize("stem", [Path(n).stem for n in ONNX_MODELS])
def test_a_module_without_its_sidecar_parses_checks_shows_and_partitions(imported, stem):
    path, _ = imported[stem]
    text = path.read_text()
    result = run("check", "-", input=text)
    assert (result.exit_code, result.stderr) == (0, "ok: 1 function\n")
    result = run("show", "-", input=text)
    assert result.exit_code == 0 and result.stdout == text
    for extra in ([], ["--path", "merge"], ["--layout", "NHWC", "--fold-batch-norm"]):
        result = run("partition", "-", "--backend", "cutlass", "--backend", "cublas", *extra, input=text)
        assert result.exit_code == 0, (extra, result.stderr)
    result = run("run", "-", input=text)  # running needs the values: a clear error, exit 1
    assert result.exit_code == 1
    assert "a constant's value is unknown (the module was read without its sidecar .npz)" in result.stderr


def test_every_op_accepts_an_operand_of_unknown_type():
    """The class behind `gamma has dtype None`: for every op's sample call, each tensor
    operand replaced by one of unknown dtype and rank (a constant read without its
    sidecar) still infers."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "ops"))  # the op samples of tests/ops
    from test_ops_registry import SAMPLES as OP_SAMPLES

    from byocc.ir import TensorStructInfo
    from byocc.ir import Tuple
    from byocc.ir import Var
    from byocc.ops import lookup_printed
    from byocc.ops import make_call

    def unknown(arg):
        if isinstance(arg, Var) and isinstance(arg.struct_info, TensorStructInfo):
            return Var(arg.name_hint, TensorStructInfo())
        if isinstance(arg, Tuple):
            return Tuple(tuple(unknown(f) for f in arg.fields))
        return None

    failures, tried = [], 0
    for name, (dotted, pos, kw, _) in sorted(OP_SAMPLES.items()):
        for i, arg in enumerate(pos):
            replaced = unknown(arg)
            if replaced is None:
                continue
            args = list(pos)
            args[i] = replaced
            tried += 1
            try:
                opdef = lookup_printed(dotted, len(args), kw)
                make_call(opdef, *opdef.bind(args, kw))
            except Exception as err:  # noqa: BLE001  (collect every failure)
                failures.append(f"{name} operand {i}: {err}")
    assert tried > 100
    assert failures == []


# --------------------------------------------------------------------------- sidecar that does not fit
def _with_sidecar(tmp_path, imported, change):
    path, arrays = imported["small_cnn"]
    model = tmp_path / "cnn.relax"
    shutil.copy(path, model)
    arrays = dict(arrays)
    change(arrays)
    np.savez(tmp_path / "cnn.npz", **arrays)
    return model


SIDECAR_CASES = {
    "wrong shape (inferred use)": (
        lambda a: a.update({"ir.GenericConst/2": np.ones(9, "float32")}),
        'error: the array "ir.GenericConst/2" in the sidecar {sidecar} (shape (9,), dtype float32) does '
        "not fit the module: relax.nn.batch_norm: requires gamma, beta, etc. to have the sizes"),
    "wrong shape (annotation)": (
        lambda a: a.update({"ir.GenericConst/0": np.ones((8, 3, 5, 5), "float32")}),
        'error: the array "ir.GenericConst/0" in the sidecar {sidecar} (shape (8, 3, 5, 5), dtype float32) '
        "does not fit the module: the annotation of 'lv' does not match its value"),
    "wrong dtype": (
        lambda a: a.update({"ir.GenericConst/2": a["ir.GenericConst/2"].astype("float16")}),
        'error: the array "ir.GenericConst/2" in the sidecar {sidecar} (shape (8,), dtype float16) does '
        "not fit the module"),
    "missing key": (
        lambda a: a.pop("ir.GenericConst/3"),
        'error: the sidecar {sidecar} has no array "ir.GenericConst/3" for this constant'),
    "extra key": (
        lambda a: a.update({"ir.GenericConst/99": np.ones(3)}),
        'error: the sidecar {sidecar} has an array "ir.GenericConst/99" that the module does not use'),
}


@pytest.mark.parametrize("case", sorted(SIDECAR_CASES))
def test_a_sidecar_that_does_not_fit_is_one_error_naming_the_key(tmp_path, imported, case):
    change, message = SIDECAR_CASES[case]
    model = _with_sidecar(tmp_path, imported, change)
    for command in (["check", model], ["show", model], ["run", model],
                    ["partition", model, "--backend", "cutlass"]):
        result = run(*command)
        assert result.exit_code == 1, (command, result.output)
        assert message.format(sidecar=tmp_path / "cnn.npz") in result.stderr, (command, result.stderr)
        assert result.stderr.count("error:") == 1


def test_a_constant_annotated_directly_is_checked_against_its_array(tmp_path):
    model = tmp_path / "m.relax"
    model.write_text(SEED.read_text().replace(
        '            gv: R.Tensor((10, 10), dtype="float32") = R.multiply(x, y)\n',
        '            c: R.Tensor((10, 10), dtype="float32") = metadata["ir.GenericConst"][0]\n'
        '            gv: R.Tensor((10, 10), dtype="float32") = R.multiply(x, c)\n'))
    assert run("check", model).exit_code == 0  # no sidecar: the annotation gives the type
    np.savez(tmp_path / "m.npz", **{"ir.GenericConst/0": np.ones((10, 3), "float32")})
    result = run("check", model)
    assert result.exit_code == 1
    assert (f'error: the array "ir.GenericConst/0" in the sidecar {tmp_path / "m.npz"} has shape (10, 3), '
            "but the annotation says (10, 10)") in result.stderr


# --------------------------------------------------------------------------- ONNX everywhere
@pytest.mark.parametrize("name", ONNX_MODELS)
def test_every_command_taking_model_imports_onnx(tmp_path, imported, name):
    stem = Path(name).stem
    relax_text = imported[stem][0].read_text()
    onnx = SAMPLES / name
    result = run("check", onnx)
    assert (result.exit_code, result.stderr) == (0, "ok: 1 function\n")
    result = run("show", onnx)
    assert result.exit_code == 0 and result.stdout == relax_text
    assert "warning: the values of" in result.stderr and "byocc import MODEL -o OUT.relax" in result.stderr
    from_relax = run("partition", imported[stem][0], "--backend", "cutlass", "--path", "merge")
    from_onnx = run("partition", onnx, "--backend", "cutlass", "--path", "merge")
    assert from_onnx.exit_code == 0 and from_onnx.stdout == from_relax.stdout
    assert run("run", onnx).exit_code == 0
    assert run("verify", onnx, "--backend", "cutlass", "--trials", "1").exit_code == 0


# --------------------------------------------------------------------------- text encodings
def test_bom_crlf_and_non_ascii_identifiers_are_accepted(tmp_path):
    text = SEED.read_text()
    variants = {
        "bom": "\ufeff" + text,
        "crlf": text.replace("\n", "\r\n"),
        "bom+crlf": "\ufeff" + text.replace("\n", "\r\n"),
        "unicode": text.replace("(x: ", "(données: ").replace("R.multiply(x, y)", "R.multiply(données, y)"),
    }
    assert "données" in variants["unicode"]
    for name, variant in variants.items():
        path = tmp_path / f"{name.replace('+', '_')}.relax"
        path.write_bytes(variant.encode("utf-8"))
        for source in ([path], ["-"]):
            result = run("check", *source, input=variant.encode("utf-8") if source == ["-"] else None)
            assert (result.exit_code, result.stderr) == (0, "ok: 1 function\n"), (name, result.stderr)
        result = run("partition", path, "--patterns", SEED_PATTERNS)
        assert result.exit_code == 0, (name, result.stderr)
    # TVM's printer writes each byte outside [A-Za-z0-9_] as "_": so does byocc's
    result = run("show", tmp_path / "unicode.relax")
    assert "def main(donn__es: " in result.stdout


# --------------------------------------------------------------------------- unreadable input
def test_binary_input_gives_the_same_message_from_a_file_and_from_stdin(tmp_path):
    data = (SAMPLES / "small_cnn.onnx").read_bytes()[:200]
    path = tmp_path / "model.relax"
    path.write_bytes(data)
    from_file = run("check", path)
    from_stdin = run("check", "-", input=data)
    assert from_file.exit_code == from_stdin.exit_code == 1
    tail = from_file.stderr.split(": error: ", 1)[1]
    assert tail.startswith("not UTF-8 text (") and "a binary file?" in tail
    assert from_file.stderr == f"{path}: error: {tail}"
    assert from_stdin.stderr == f"<stdin>: error: {tail}"
    assert len(from_file.stderr.splitlines()) == 1  # no binary source line echoed


def test_stdin_closed_is_an_input_error():
    proc = subprocess.run(f"{sys.executable} -m byocc check - <&-", shell=True, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr == "<stdin>: error: stdin is closed; give MODEL as a file name, or pipe a module into -\n"


@pytest.mark.parametrize("content, message", [
    (b"\x00\xff\xfe", "not UTF-8 text (invalid start byte at byte 1): a pattern file is Python source"),
    (b"patterns = []\x00", "a NUL byte at byte 13: a pattern file is Python source, not a binary file"),
])
def test_a_binary_pattern_file_is_an_error_located_at_it(tmp_path, content, message):
    patterns = tmp_path / "p.py"
    patterns.write_bytes(content)
    for command in ("partition", "verify"):
        result = run(command, SEED, "--patterns", patterns)
        assert result.exit_code == 1
        assert result.stderr == f"{patterns}: error: {message}\n"


def test_missing_pattern_file_is_located_at_it(tmp_path):
    result = run("partition", SEED, "--patterns", tmp_path / "nope.py")
    assert result.exit_code == 2
    assert result.stderr == f"{tmp_path / 'nope.py'}: error: cannot read pattern file: no such file\n"


# --------------------------------------------------------------------------- constants on stdout
def test_partition_to_stdout_says_constant_values_are_dropped(imported):
    path, arrays = imported["small_cnn"]
    result = run("partition", path, "--backend", "cutlass")
    assert result.exit_code == 0
    assert result.stderr == (f"warning: the values of {len(arrays)} tensor constants are not written to "
                             "stdout (the text refers to them as metadata[...]); use -o DIR to keep them "
                             "in a sidecar .npz\n")
    assert run("partition", SEED, "--patterns", SEED_PATTERNS).stderr == ""  # nothing to drop


# --------------------------------------------------------------------------- ONNX: opsets, strings
def _onnx_model(tmp_path, name, nodes, inputs, outputs, initializers=(), opset=17):
    import onnx
    from onnx import helper

    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    path = tmp_path / f"{name}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
    return path


def _vi(name, elem, shape):
    from onnx import helper

    return helper.make_tensor_value_info(name, elem, shape)


def test_models_at_the_installed_onnx_opset_import(tmp_path):
    import onnx
    from onnx import TensorProto
    from onnx import helper

    from byocc.frontend.onnx import MAX_OPSET

    assert MAX_OPSET == max(21, onnx.defs.onnx_opset_version())
    x, y = _vi("x", TensorProto.FLOAT, [2, 3]), _vi("y", TensorProto.FLOAT, [2, 3])
    for opset in range(9, MAX_OPSET + 1):
        nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mod", ["r", "x"], ["y"], fmod=1)]
        model = _onnx_model(tmp_path, f"op{opset}", nodes, [x], [y], opset=opset)
        result = run("import", model)
        assert result.exit_code == 0, (opset, result.stderr)
        assert "= R.nn.relu(x)" in result.stdout and "= R.mod(r, x)" in result.stdout, (opset, result.stdout)
        assert run("run", model).exit_code == 0, opset


def test_an_operator_changed_after_the_reviewed_versions_is_named(tmp_path, monkeypatch):
    from onnx import TensorProto
    from onnx import helper

    import byocc.frontend.onnx as importer

    monkeypatch.setitem(importer.REVIEWED_AFTER_21, "Mod", 13)  # pretend Mod-28 was not reviewed
    x, y = _vi("x", TensorProto.FLOAT, [2]), _vi("y", TensorProto.FLOAT, [2])
    model = _onnx_model(tmp_path, "mod28", [helper.make_node("Mod", ["x", "x"], ["y"], fmod=1)], [x], [y], opset=28)
    result = run("import", model)
    assert result.exit_code == 1
    assert "Mod (node '(unnamed)', opset 28): its meaning changed in opset 28" in result.stderr


def test_string_tensors_are_refused_at_import_with_their_name(tmp_path):
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper

    x, y = _vi("x", TensorProto.FLOAT, [2]), _vi("y", TensorProto.FLOAT, [2])
    strings = numpy_helper.from_array(np.array([b"a", b"bc"], dtype=object), name="labels")
    model = _onnx_model(tmp_path, "init", [helper.make_node("Relu", ["x"], ["y"]),
                                           helper.make_node("Identity", ["labels"], ["lab"])],
                        [x], [y, _vi("lab", TensorProto.STRING, [2])], [strings])
    result = run("import", model)
    assert result.exit_code == 1
    assert "'lab' is a string tensor; byocc imports numeric and bool tensors only" in result.stderr
    model = _onnx_model(tmp_path, "input", [helper.make_node("Relu", ["x"], ["y"])],
                        [x, _vi("s", TensorProto.STRING, [2])], [y])
    result = run("import", model, "-o", tmp_path / "m.relax")
    assert result.exit_code == 1
    assert result.stderr == f"{model}: error: graph input 's' is a string tensor; byocc imports numeric and bool tensors only\n"
    assert not (tmp_path / "m.relax").exists()


def test_a_realistic_prim_func_says_tir_is_not_supported(tmp_path):
    model = tmp_path / "tir.relax"
    model.write_text('''\
# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func
    def add(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("b"):
                B[i] = A[i] + T.float32(1)

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        return x
''')
    result = run("check", model)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == f"{model}:7:6: error: TIR functions (@T.prim_func) are not supported by byocc"
