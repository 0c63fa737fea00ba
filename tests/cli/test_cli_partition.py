"""``byocc partition``: the seed module on both paths prints spec/textual-ir.md's E2 and E4,
pattern-table options, pass instruments, and all-or-nothing ``-o`` output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import require_shared
from conftest import run_cli as run

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "samples" / "seed.relax"
SEED_PATTERNS = ROOT / "samples" / "seed_patterns.py"


def spec_example(name: str) -> str:
    """The output block of example ``name`` (e.g. "E2") in spec/textual-ir.md, as
    ``mod.show()`` prints it (the text plus one newline)."""
    spec = require_shared("spec", "textual-ir.md")
    text = spec.read_text(encoding="utf-8")
    match = re.search(rf"^\*\*{name}\. .*?```python\n(.*?)```", text, re.S | re.M)
    assert match, name
    return match.group(1)


@pytest.mark.parametrize(("path", "example"), [("annotate", "E2"), ("merge", "E4")])
def test_seed_partition_prints_the_spec_examples(path, example):
    result = run("partition", SEED, "--path", path, "--patterns", SEED_PATTERNS)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == spec_example(example)
    assert result.stderr == ""


def test_defaults_are_annotate_and_bind_constants():
    default = run("partition", SEED, "--patterns", SEED_PATTERNS)
    explicit = run("partition", SEED, "--path", "annotate", "--bind-constants", "--patterns", SEED_PATTERNS)
    assert default.exit_code == explicit.exit_code == 0
    assert default.stdout == explicit.stdout == spec_example("E2")


def test_partition_reads_stdin():
    result = run("partition", "-", "--path", "merge", "--patterns", SEED_PATTERNS, input=SEED.read_text())
    assert result.exit_code == 0, result.stderr
    assert result.stdout == spec_example("E4")


def test_empty_pattern_table_leaves_the_module_alone(tmp_path):
    empty = tmp_path / "empty.py"
    empty.write_text("patterns = []\n")
    result = run("partition", SEED, "--patterns", empty)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == SEED.read_text()


def test_missing_pattern_file_exit_2(tmp_path):
    result = run("partition", SEED, "--patterns", tmp_path / "none.py")
    assert result.exit_code == 2  # a path on the command line that does not exist: usage
    assert "cannot read pattern file" in result.stderr and "no such file" in result.stderr


def test_pattern_file_error_is_located(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("patterns = [\n    (\"cutlass.x\", is_opp(\"relax.add\")),\n]\n")
    result = run("partition", SEED, "--patterns", bad)
    assert result.exit_code == 1
    assert "Traceback" not in result.stderr
    assert f"{bad}:2:" in result.stderr and "is_opp" in result.stderr


def test_pattern_name_without_backend_prefix_is_an_input_error(tmp_path):
    bad = tmp_path / "noprefix.py"
    bad.write_text('patterns = [("multiply", is_op("relax.multiply")(wildcard(), wildcard()))]\n')
    result = run("partition", SEED, "--patterns", bad)
    assert result.exit_code == 1
    assert "error:" in result.stderr and "Traceback" not in result.stderr


def test_unknown_backend_names_the_known_ones():
    # a usage error, like an unknown --path (issue 9)
    result = run("partition", SEED, "--backend", "nosuch")
    assert result.exit_code == 2
    assert "unknown backend 'nosuch'" in result.stderr
    assert "cutlass" in result.stderr and "cublas" in result.stderr


def test_time_passes_and_print_after_go_to_stderr():
    result = run("partition", SEED, "--path", "merge", "--patterns", SEED_PATTERNS,
                 "--time-passes", "--print-after", "MergeCompositeFunctions")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == spec_example("E4")
    assert re.search(r"^\s*FuseOpsByPattern: \d+\.\d+ms", result.stderr, re.M), result.stderr
    assert re.search(r"^\s*MergeCompositeFunctions: \d+\.\d+ms", result.stderr, re.M)
    assert "After Running Pass: MergeCompositeFunctions\n" + spec_example("E4") in result.stderr
    assert "After Running Pass: FuseOpsByPattern" not in result.stderr


def test_dump_ir_writes_one_file_per_pass(tmp_path):
    dump = tmp_path / "dump"
    result = run("partition", SEED, "--path", "merge", "--patterns", SEED_PATTERNS, "--dump-ir", dump)
    assert result.exit_code == 0, result.stderr
    names = sorted(p.name for p in dump.iterdir())
    assert any(n.endswith("_FuseOpsByPattern.relax") for n in names), names
    assert any(n.endswith("_MergeCompositeFunctions.relax") for n in names), names


def test_output_folder_failure_writes_nothing(tmp_path, monkeypatch):
    """If RunCodegen fails, -o leaves no half-written folder behind."""
    from byocc.ir import InputError

    def failing_codegen(*args, **kwargs):
        def run_pass(mod):
            raise InputError("no code generator for backend 'cutlass'")
        return run_pass

    monkeypatch.setattr("byocc.transform.RunCodegen", failing_codegen)
    out = tmp_path / "out"
    result = run("partition", SEED, "--patterns", SEED_PATTERNS, "-o", out)
    assert result.exit_code == 1
    assert "no code generator for backend 'cutlass'" in result.stderr
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_output_folder_holds_partitioned_codegen_and_manifest(tmp_path):
    out = tmp_path / "out"
    result = run("partition", SEED, "--path", "merge", "--patterns", SEED_PATTERNS, "-o", out)
    if result.exit_code != 0 and "no codegen registered for backend 'cutlass'" in result.stderr:
        pytest.skip("the cutlass code generator is not registered yet")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert (out / "seed.partitioned.relax").read_text() == spec_example("E4")
    codegen = (out / "seed.codegen.relax").read_text()
    assert 'R.call_dps_packed("fused_relax_multiply1_cutlass", (x, y)' in codegen
    import json

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["byocc_version"] == "0.1.0"
    assert SEED.read_text() == (ROOT / "samples" / "seed.relax").read_text()  # input untouched


SOFTMAXES = '''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8, 16), dtype="float32")) -> R.Tensor((8, 16), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((8, 16), dtype="float32") = R.nn.softmax(x, axis=-1)
            b: R.Tensor((8, 16), dtype="float32") = R.nn.softmax(x, axis=0)
            y: R.Tensor((8, 16), dtype="float32") = R.add(a, b)
            R.output(y)
        return y
'''
LAST_AXIS = '''def last_axis(ctx):
    call = ctx.matched_expr
    return call.attrs.axis in (-1, call.ty.ndim - 1)


patterns = [("sm.softmax", is_op("relax.nn.softmax")(wildcard()), {}, last_axis)]
'''


def test_explain_says_what_was_offloaded_and_why_the_rest_was_not(tmp_path):
    model = tmp_path / "softmaxes.relax"
    model.write_text(SOFTMAXES)
    patterns = tmp_path / "last_axis.py"
    patterns.write_text(LAST_AXIS)
    report_file = tmp_path / "explain.json"
    plain = run("partition", model, "--patterns", patterns)
    result = run("partition", model, "--patterns", patterns, "--explain", "--explain-json", report_file)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == plain.stdout  # the explanation never goes to stdout
    import json

    report = json.loads(report_file.read_text())
    assert report["path"] == "annotate" and report["patterns"] == 1
    assert report["offloaded"] == [{"function": "fused_relax_nn_softmax_sm", "backend": "sm",
                                    "composites": ["sm.softmax"], "calls": 1}]
    assert report["host"] == [
        {"function": "main", "binding": "b", "op": "relax.nn.softmax", "location": f"{model}:10:13",
         "pattern": "sm.softmax", "reason": "check function last_axis returned False"},
    ]
    assert report["host_other"] == 1  # the add: no pattern is rooted at it, not a heavy op
    assert report["host_other_ops"] == {"relax.add": 1}
    assert result.stderr.splitlines() == [
        "offloaded:",
        "  fused_relax_nn_softmax_sm -> sm (sm.softmax), called once",
        "kept on the host:",
        f"  {model}:10:13: main.b = relax.nn.softmax: [sm.softmax] check function last_axis returned False",
        "(1 other operator calls without a pattern stay on the host: 1 relax.add)",
    ]


@pytest.fixture
def stub_backend():
    """A backend "stubbed" whose codegen writes one placeholder source per function."""
    from byocc.backends import register_codegen
    from byocc.backends import unregister_codegen
    from byocc.transform import stub_codegen

    register_codegen("stubbed", stub_codegen("stubbed", per_function=True))
    yield "stubbed"
    unregister_codegen("stubbed")


def test_output_folder_with_a_codegen(tmp_path, stub_backend):
    patterns = tmp_path / "stub.py"
    patterns.write_text('patterns = [("stubbed.multiply", is_op("relax.multiply")(wildcard(), wildcard()))]\n')
    model = tmp_path / "seed.relax"
    model.write_text(SEED.read_text())
    out = tmp_path / "out"
    printed = run("partition", model, "--path", "merge", "--patterns", patterns)
    result = run("partition", model, "--path", "merge", "--patterns", patterns, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr == f"wrote 4 files to {out}\n"
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "manifest.json", "seed.codegen.relax", "seed.partitioned.relax",
        "src/fused_relax_multiply1_stubbed.cc",
    ]
    assert (out / "seed.partitioned.relax").read_text() == printed.stdout
    codegen = (out / "seed.codegen.relax").read_text()
    assert ('gv = R.call_dps_packed("fused_relax_multiply1_stubbed", (x, y), '
            'out_ty=R.Tensor((10, 10), dtype="float32"))') in codegen
    assert 'I.module_attrs({"external_mods": [metadata["ffi.Module"][0]]})' in codegen
    import json

    manifest = json.loads((out / "manifest.json").read_text())
    # the one manifest schema; a stand-in module's function has no code, only its files
    assert manifest == {
        "abi_version": 1, "byocc_version": "0.1.0", "codegen_version": "1", "archs": [],
        "library": "lib/libbyocc_seed.so", "uses_cutlass": False, "uses_cublaslt": False,
        "codegen_options": {},
        "functions": [{
            "symbol": "fused_relax_multiply1_stubbed", "global_symbol": "fused_relax_multiply1_stubbed",
            "backend": "stubbed",
            "composites": ["stubbed.multiply"],
            "args": [{"name": "x", "dtype": "float32", "shape": [10, 10]},
                     {"name": "y", "dtype": "float32", "shape": [10, 10]}],
            "outputs": [{"dtype": "float32", "shape": [10, 10]}],
            "source_files": ["src/fused_relax_multiply1_stubbed.cc"], "status": "no_code",
        }],
        "files": ["manifest.json", "seed.codegen.relax", "seed.partitioned.relax",
                  "src/fused_relax_multiply1_stubbed.cc"],
    }
    nothing = run("build", out)
    assert nothing.exit_code == 1
    assert "no build plan (field 'build')" in nothing.stderr
    # a second run into the same folder replaces the files in place, byte-identical
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    again = run("partition", model, "--path", "merge", "--patterns", patterns, "-o", out)
    assert again.exit_code == 0
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "seed.relax", "stub.py"]


def test_output_path_that_is_a_file_is_a_usage_error_before_the_work(tmp_path, stub_backend):
    patterns = tmp_path / "stub.py"
    patterns.write_text('patterns = [("stubbed.multiply", is_op("relax.multiply")(wildcard(), wildcard()))]\n')
    target = tmp_path / "taken"
    target.write_text("keep me\n")
    result = run("partition", SEED, "--patterns", patterns, "-o", target)
    assert result.exit_code == 2
    assert result.stderr.endswith(f"Error: Invalid value for '-o': cannot write '{target}': "
                                  "exists and is not a folder\n")
    assert target.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stub.py", "taken"]


def test_print_after_an_unknown_pass_is_a_usage_error_listing_the_passes():
    result = run("partition", SEED, "--patterns", SEED_PATTERNS, "--print-after", "FuseOps")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.endswith(
        "Error: Invalid value for '--print-after': no pass 'FuseOps' on this run (--path annotate; "
        "its passes: FuseOpsByPattern, partition); did you mean 'FuseOpsByPattern'?\n")


@pytest.mark.parametrize(("args", "name", "hint"), [
    (["--path", "annotate"], "MergeCompositeFunctions", "it runs with --path merge"),
    (["--path", "merge"], "RunCodegen", "it runs with -o DIR"),
    (["--path", "merge"], "FoldConstant", "it runs with --prepare or --backend-steps"),
    (["--path", "merge"], "NoSuchPass", "its passes: FuseOpsByPattern, MergeCompositeFunctions, partition, "
                                        "RunCodegen)"),
])
def test_print_after_a_pass_the_chosen_path_does_not_run_is_a_usage_error(tmp_path, args, name, hint):
    out = tmp_path / "out"
    result = run("partition", SEED, "--patterns", SEED_PATTERNS, *args, "--print-after", name,
                 *(["-o", out] if name != "RunCodegen" else []))
    assert result.exit_code == 2, result.output
    assert f"no pass {name!r} on this run (--path {args[1]}; its passes: " in result.stderr
    assert hint in result.stderr
    assert "After Running Pass" not in result.stderr  # refused before the work
    assert not out.exists()


def test_print_after_knows_every_pass_that_runs(tmp_path):
    # every name --print-after-all prints is accepted by --print-after (prepare, backend steps, -o)
    args = ["partition", ROOT / "samples" / "mlp_fp16.relax", "--backend", "cutlass", "--path", "merge",
            "--prepare", "--backend-steps", "-o", tmp_path / "out"]
    every = run(*args, "--print-after-all")
    assert every.exit_code == 0, every.stderr
    ran = re.findall(r"^After Running Pass: (\S+)$", every.stderr, re.M)
    assert {"FoldConstant", "FuseOpsByPattern", "MergeCompositeFunctions", "partition"} <= set(ran)
    chosen = [a for name in sorted(set(ran) | {"RunCodegen"}) for a in ("--print-after", name)]
    result = run(*args, *chosen)
    assert result.exit_code == 0, result.stderr
    assert set(re.findall(r"^After Running Pass: (\S+)$", result.stderr, re.M)) == set(ran) | {"RunCodegen"}
