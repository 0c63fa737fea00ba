"""Diagnostics show a window of the source line and never raw control characters (issue 9,
class 4): a 5 MB line wrote 10 MB to stderr, and escape sequences reached the terminal."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from byocc.cli import cli
from byocc.cli.diagnostics import SNIPPET_WIDTH
from byocc.cli.diagnostics import escape_controls
from byocc.cli.diagnostics import snippet

SEED = Path(__file__).resolve().parents[2] / "samples" / "seed.relax"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_a_huge_line_shows_a_window_around_the_column(tmp_path):
    model = tmp_path / "long.relax"
    model.write_text(SEED.read_text().replace("R.multiply(x, y)", "R.multiply(x, y" + ", x" * 2_000_000 + ")"))
    result = run("check", model)
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0] == f"{model}:9:55: error: R.multiply takes at most 2 positional arguments (x1, x2), got 2000002"
    assert len(result.stderr) < 1000
    assert len(lines[1]) <= SNIPPET_WIDTH + 6 and lines[1].endswith("...")
    assert lines[2].index("^") == lines[1].index("R.multiply")


def test_escape_sequences_from_the_input_are_shown_escaped(tmp_path):
    model = tmp_path / "esc.relax"
    model.write_text(SEED.read_text().replace("R.multiply(x, y)", "R.multiply(x, \x1b[31my)"))
    result = run("check", model)
    assert result.exit_code == 1
    assert "\x1b" not in result.stderr
    assert result.stderr.splitlines()[1].endswith("R.multiply(x, \\x1b[31my)")
    assert result.stderr.splitlines()[2].endswith("^~~~")


def test_snippet_keeps_short_lines_and_tabs():
    assert snippet("\tab = c", 3, 2) == ("\tab = c", "\t ^~")
    assert escape_controls("a\tb\x07c\u2028\nd") == "a\tb\\x07c\\u2028\nd"
