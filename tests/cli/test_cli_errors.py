"""CLI error handling: exit codes, located messages with the source line and a caret,
no tracebacks (design.md "CLI contract", style.md section 8)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_cli as run

from byocc.cli.diagnostics import format_error
from byocc.cli.diagnostics import remember_source
from byocc.ir import MultipleErrors
from byocc.ir import ParseError
from byocc.ir import PassError
from byocc.ir import Span
from byocc.ir import WellFormedError

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "samples" / "seed.relax"
LOCATED = re.compile(r"^(?P<file>[^\n]+):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.+)$", re.M)


def seed_with(tmp_path: Path, old: str, new: str) -> Path:
    text = SEED.read_text()
    assert old in text
    path = tmp_path / "bad.relax"
    path.write_text(text.replace(old, new, 1))
    return path


def assert_located(stderr: str, path: Path, line: int) -> re.Match:
    """The first message names ``path:line``, then shows that line and a caret under the column."""
    match = LOCATED.search(stderr)
    assert match, stderr
    assert match["file"] == str(path) and int(match["line"]) == line, stderr
    lines = stderr.splitlines()
    i = lines.index(match.group(0))
    source_line = path.read_text().splitlines()[line - 1]
    assert lines[i + 1] == source_line
    caret = lines[i + 2]
    assert caret.lstrip(" ").startswith("^") and len(caret) - len(caret.lstrip(" ")) == int(match["col"]) - 1
    assert "Traceback" not in stderr
    return match


@pytest.mark.parametrize("command", ["show", "check"])
def test_missing_file_is_one_clear_message_exit_2(command, tmp_path):
    missing = tmp_path / "nope.relax"
    result = run(command, str(missing))
    assert result.exit_code == 2  # a path named on the command line that is not there: usage
    assert result.stdout == ""
    assert result.stderr == f"{missing}: error: no such file\n"


def test_missing_file_for_partition(tmp_path):
    result = run("partition", str(tmp_path / "nope.relax"), "--patterns", str(ROOT / "samples/seed_patterns.py"))
    assert result.exit_code == 2
    assert result.stderr == f"{tmp_path / 'nope.relax'}: error: no such file\n"


def test_folder_instead_of_file(tmp_path):
    result = run("show", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr == f"{tmp_path}: error: is a folder, not a .relax or .onnx file\n"


def test_malformed_text_is_located(tmp_path):
    # an extra closing parenthesis on line 9
    path = seed_with(tmp_path, "R.multiply(x, y)", "R.multiply(x, y))")
    result = run("show", str(path))
    assert result.exit_code == 1 and result.stdout == ""
    match = assert_located(result.stderr, path, 9)
    assert int(match["col"]) == path.read_text().splitlines()[8].index("R.multiply(x, y))") + len("R.multiply(x, y)") + 1


def test_unknown_op_is_located(tmp_path):
    path = seed_with(tmp_path, "R.multiply(x, y)", "R.multiplyy(x, y)")
    result = run("check", str(path))
    assert result.exit_code == 1
    match = assert_located(result.stderr, path, 9)
    assert "multiplyy" in match["msg"]


def test_malformed_stdin_is_located_as_stdin():
    text = SEED.read_text().replace("R.multiply(x, y)", "R.multiply(x, y))")
    result = run("check", "-", input=text)
    assert result.exit_code == 1
    match = LOCATED.search(result.stderr)
    assert match and match["file"] == "<stdin>" and match["line"] == "9", result.stderr
    assert text.splitlines()[8] in result.stderr.splitlines()


def test_usage_errors_exit_2():
    assert run("show").exit_code == 2
    assert run("partition", str(SEED), "--path", "sideways").exit_code == 2
    assert run("frobnicate").exit_code == 2


def test_partition_without_a_pattern_table_is_a_usage_error():
    result = run("partition", str(SEED))
    assert result.exit_code == 2
    assert "--backend NAME and/or --patterns FILE.py" in result.stderr


def load_raises(monkeypatch, exc: Exception) -> None:
    """Make `byocc show` fail with ``exc`` while loading its model."""
    def fail(path):
        raise exc

    monkeypatch.setattr("byocc.cli.show.load_model", fail)


def test_unexpected_exception_is_an_internal_error_exit_70(monkeypatch):
    load_raises(monkeypatch, RuntimeError("boom"))
    result = run("show", str(SEED))
    assert result.exit_code == 70
    assert result.stderr == ("internal error: RuntimeError: boom; this is a bug in byocc, please "
                             "report it (run with --debug for the traceback)\n")


def test_debug_lets_the_traceback_through(monkeypatch):
    load_raises(monkeypatch, RuntimeError("boom"))
    with pytest.raises(RuntimeError, match="boom"):
        run("--debug", "show", str(SEED))


def test_byocc_error_exit_code_is_used(monkeypatch):
    load_raises(monkeypatch, PassError("MergeCompositeFunctions needs a function named main"))
    result = run("show", str(SEED))
    assert result.exit_code == 1
    assert result.stderr == "byocc: error: MergeCompositeFunctions needs a function named main\n"


def test_external_tool_error_exits_3(monkeypatch):
    from byocc.ir import ExternalToolError

    load_raises(monkeypatch, ExternalToolError("nvcc not found"))
    result = run("show", str(SEED))
    assert result.exit_code == 3
    assert result.stderr == "byocc: error: nvcc not found\n"


# ---------------------------------------------------------------- rendering, unit level
SOURCE = "def f(x):\n\treturn R.foo(x)\n"


def test_format_error_shows_line_and_underlines_the_span():
    remember_source("mem.relax", SOURCE)
    err = ParseError("unknown operator R.foo", Span("mem.relax", 2, 9, 2, 14), notes=("see spec section 5.2",))
    assert [text for _, text in format_error(err)] == [
        "mem.relax:2:9: error: unknown operator R.foo",
        "\treturn R.foo(x)",
        "\t       ^~~~~",
        "note: see spec section 5.2",
    ]


def test_format_error_lists_every_problem_of_multiple_errors():
    remember_source("mem.relax", SOURCE)
    errs = MultipleErrors([
        WellFormedError("first", Span("mem.relax", 1, 7)),
        WellFormedError("second", Span("mem.relax", 2, 2)),
    ])
    assert [text for _, text in format_error(errs)] == [
        "mem.relax:1:7: error: first", "def f(x):", "      ^",
        "mem.relax:2:2: error: second", "\treturn R.foo(x)", "\t^",
        "2 errors",
    ]


def test_format_error_without_span_names_the_file():
    assert format_error(PassError("no main"), default_source="m.relax") == [("location", "m.relax: error: no main")]


TWO_PROBLEMS = '''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def f(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"global_symbol": "g"})
        return x

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"global_symbol": "other"})
        return x
'''


def test_check_reports_every_problem_located(tmp_path):
    path = tmp_path / "two.relax"
    path.write_text(TWO_PROBLEMS)
    result = run("check", str(path))
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"{path}:7:9: error: ") and "g" in lines[0]
    assert lines[1] == TWO_PROBLEMS.splitlines()[6]
    assert lines[3].startswith(f"{path}:12:9: error: ") and "other" in lines[3]
    assert lines[4] == TWO_PROBLEMS.splitlines()[11]
    assert lines[-1] == "2 errors"
    assert len(lines) == 7


def test_check_from_stdin_ok():
    result = run("check", "-", input=SEED.read_text())
    assert result.exit_code == 0
    assert result.stderr == "ok: 1 function\n"


def test_import_of_a_relax_file_names_it_once_and_says_what_import_reads():
    model = ROOT / "samples" / "mlp_fp16.relax"
    result = run("import", model)
    assert result.exit_code == 1
    assert result.stderr.count(str(model)) == 1, result.stderr
    assert result.stderr.startswith(f"{model}: error: not a readable ONNX model (")
    assert "note: byocc import reads ONNX models; the other commands read a .relax file as it is" in result.stderr


def test_an_error_that_names_its_file_is_not_prefixed_with_it_twice():
    from byocc.ir import FrontendError

    lines = format_error(FrontendError("m.onnx: no such node"), default_source="m.onnx")
    assert lines == [("location", "m.onnx: error: no such node")]


def test_byocc_help_shows_each_command_line_whole():
    result = run("--help")
    assert result.exit_code == 0
    commands = result.stdout[result.stdout.index("Commands:"):]
    assert "..." not in commands, commands
    assert "build      Compile DIR's generated sources into DIR/lib/libbyocc_<stem>.so." in commands
    joined = " ".join(commands.split())
    assert "verify Check, on the interpreter, that partitioning MODEL keeps what it computes." in joined
