"""``byocc show`` and ``byocc check`` on the samples: round trips, the terminal summary,
stdin, and a reader that closes the pipe early."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli as run
from test_cli_partition import spec_example  # the spec's example texts

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "samples").glob("*.relax"))


def test_there_are_samples():
    assert {p.name for p in SAMPLES} >= {"seed.relax", "mlp_fp16.relax", "conv2d_nhwc_fp16.relax",
                                         "transformer_block_fp16.relax"}


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_show_round_trips_every_sample(sample: Path):
    result = run("show", str(sample))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == sample.read_text()
    assert result.stderr == ""


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_check_accepts_every_sample(sample: Path):
    result = run("check", str(sample))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr == "ok: 1 function\n"


def test_show_reads_stdin():
    text = (ROOT / "samples" / "seed.relax").read_text()
    result = run("show", "-", input=text)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == text


def test_summary_lists_functions_ops_and_offloading():
    result = run("show", "--summary", str(ROOT / "samples" / "mlp_fp16.relax"))
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.startswith((ROOT / "samples" / "mlp_fp16.relax").read_text())
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[1:-1]]
            for line in out.splitlines() if line.count("│") >= 3}
    assert rows["main"][:4] == ["main", "function", "7", "8"]
    assert rows["relax.matmul"] == ["relax.matmul", "3"]
    assert rows["relax.add"] == ["relax.add", "3"]
    assert rows["relax.nn.relu"] == ["relax.nn.relu", "2"]
    assert rows["(none)"] == ["(none)", "0", ""]


def test_summary_of_a_partitioned_module_names_backend_and_composites():
    seed = ROOT / "samples" / "seed.relax"
    part = run("partition", str(seed), "--path", "annotate", "--patterns", str(ROOT / "samples/seed_patterns.py"))
    assert part.exit_code == 0, part.stderr
    result = run("show", "--summary", "-", input=part.stdout)
    assert result.exit_code == 0, result.stderr
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[1:-1]]
            for line in result.stdout.splitlines() if line.count("│") >= 3}
    assert rows["fused_relax_multiply_cutlass"] == [
        "fused_relax_multiply_cutlass", "external", "2", "2", "cutlass", "cutlass.multiply"]
    assert rows["cutlass"] == ["cutlass", "1", "cutlass.multiply"]


def test_terminal_output_is_highlighted_with_summary(monkeypatch):
    monkeypatch.setattr("byocc.cli.show.stdout_is_terminal", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    result = run("show", str(ROOT / "samples" / "seed.relax"))
    assert result.exit_code == 0, result.stderr
    assert "\x1b[" in result.stdout  # ANSI colour
    assert "relax.multiply" in result.stdout and "offloaded" in result.stdout


def test_no_color_keeps_terminal_output_plain(monkeypatch):
    monkeypatch.setattr("byocc.cli.show.stdout_is_terminal", lambda: True)
    monkeypatch.setenv("NO_COLOR", "1")
    result = run("show", str(ROOT / "samples" / "seed.relax"))
    assert result.exit_code == 0
    assert "\x1b[" not in result.stdout
    assert result.stdout.startswith((ROOT / "samples" / "seed.relax").read_text())


def test_closed_stdout_pipe_is_quiet():
    """`byocc show big.relax | head` must not print a BrokenPipeError."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "byocc", "show", str(ROOT / "samples" / "transformer_block_fp16.relax")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the reader goes away before byocc writes anything
    _, err = proc.communicate(timeout=60)
    assert err.decode() == ""
    assert proc.returncode == 0


def test_pep695_prints_type_parameters(tmp_path):
    e8 = tmp_path / "e8.relax"
    e8.write_text(spec_example("E8"))
    plain = run("show", str(e8))
    assert plain.exit_code == 0, plain.stderr
    assert plain.stdout == spec_example("E8")
    pep695 = run("show", "--pep695", str(e8))
    assert pep695.exit_code == 0, pep695.stderr
    assert pep695.stdout == spec_example("E9")
