"""Start-up cost: ``byocc --help`` imports click and the command modules only, no heavy
dependency and no library layer (design.md: the CLI must start fast)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
from byocc.cli import main
try:
    main(["--help"])
except SystemExit as exc:
    code = exc.code
sys.stderr.write(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

HEAVY = ("numpy", "onnx", "lark", "rich", "pygments")
LAYERS = ("byocc.ir", "byocc.ops", "byocc.text", "byocc.dpl", "byocc.transform",
          "byocc.backends", "byocc.frontend", "byocc.runtime")


def test_help_imports_no_heavy_module_and_no_layer():
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=60)
    report = json.loads(proc.stderr)
    assert report["code"] == 0
    assert "partition" in proc.stdout and "show" in proc.stdout and "check" in proc.stdout
    loaded = set(report["modules"])
    assert "click" in loaded  # the probe really ran the CLI
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert heavy == []
    layers = sorted(m for m in loaded if m.startswith(LAYERS))
    assert layers == []


def test_version_via_python_dash_m():
    proc = subprocess.run([sys.executable, "-m", "byocc", "--version"], cwd=ROOT,
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout == "byocc 0.1.0\n"
