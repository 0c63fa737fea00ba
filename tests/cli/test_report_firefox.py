"""The partition report renders in Firefox too (headless ``--screenshot``; Playwright drives
only its own patched Firefox, so this is Firefox's plain command line). Skips with a message
where no Firefox is installed (Debian: ``apt-get install firefox-esr``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from conftest import run_cli

FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox")


def screenshot(page: Path, png: Path, profile: Path) -> None:
    profile.mkdir(exist_ok=True)
    proc = subprocess.run([FIREFOX, "--headless", "--no-remote", "--profile", str(profile),
                           "--window-size=1400,900", "--screenshot", str(png), page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and png.exists(), proc.stderr


@pytest.mark.skipif(FIREFOX is None, reason="no firefox/firefox-esr on PATH")
@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot is not installed")
def test_report_renders_in_firefox(tmp_path):
    page = tmp_path / "report.html"
    r = run_cli("partition", str(ROOT / "samples" / "transformer_block_fp16.relax"), "--backend",
                "cublas", "--path", "merge", "--report", str(page))
    assert r.exit_code == 0, r.output
    empty = tmp_path / "empty.html"
    empty.write_text("<!doctype html><html><body></body></html>")
    screenshot(page, tmp_path / "report.png", tmp_path / "profile")
    screenshot(empty, tmp_path / "empty.png", tmp_path / "profile")
    png = (tmp_path / "report.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    # a blank page compresses to almost nothing; the drawn graph, text and tables do not
    assert len(png) > 5 * len((tmp_path / "empty.png").read_bytes())
