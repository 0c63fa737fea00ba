"""Packaging: the wheel carries the grammar and the console script, and an installed byocc
works from any directory (no source tree on the path)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

import byocc

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "setup.py", "README.md", "byocc", "grammars")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """Build the wheel from a copy of the sources (no build/ litter in the checkout)."""
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(origin, src / name)
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
         "-w", str(out), str(src)],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (whl,) = out.glob("byocc-*.whl")
    return whl


def test_wheel_ships_grammar_and_entry_point(wheel: Path):
    assert wheel.name == f"byocc-{byocc.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert zf.read("byocc/grammars/relax.lark") == (ROOT / "grammars/relax.lark").read_bytes()
        # the prebuilt parser tables ship too (without them every start-up analyses the grammar)
        assert zf.read("byocc/text/lalr_tables.json") == (ROOT / "byocc/text/lalr_tables.json").read_bytes()
        info = f"byocc-{byocc.__version__}.dist-info"
        entry_points = zf.read(f"{info}/entry_points.txt").decode()
        metadata = zf.read(f"{info}/METADATA").decode()
    assert "byocc/__main__.py" in names and "byocc/cli/main.py" in names
    assert "[console_scripts]\nbyocc = byocc.cli:main" in entry_points
    requires = {line.split(":", 1)[1].strip() for line in metadata.splitlines()
                if line.startswith("Requires-Dist:")}
    for dep in ("click", "numpy", "lark", "rich", "onnx"):
        assert any(r.startswith(dep) for r in requires), (dep, requires)
    assert any(r.startswith("pytest") and 'extra == "test"' in r for r in requires)
    assert any(r.startswith("nvidia-cutlass") and 'extra == "cuda"' in r for r in requires)
    assert not any(n.startswith(("tests/", "samples/", "bench/")) for n in names)


def test_wheel_ships_every_cxx_file_and_template(wheel: Path):
    """The fixed C++ (``byocc/backends/<pkg>/csrc/``) and the Jinja2 templates of generated
    C++ (``templates/``) are package data: every file of those folders is in the wheel as it
    is in the tree (a file the package-data globs miss would be missing at codegen time)."""
    files = sorted(p for p in (ROOT / "byocc" / "backends").glob("*/*/*")
                   if p.parent.name in ("csrc", "templates") and p.is_file())
    assert {"cuda/csrc/byocc_abi.h", "cuda/csrc/runtime.cu", "cuda/csrc/byocc_generic.cuh",
            "cublas/csrc/cublaslt_runtime.cu", "cublas/templates/gemm_step.cu.j2"} <= {
        p.relative_to(ROOT / "byocc" / "backends").as_posix() for p in files}
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for path in files:
            name = path.relative_to(ROOT).as_posix()
            assert name in names, f"{name} is not in the wheel"
            assert zf.read(name) == path.read_bytes(), name


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\s;<>=!~\[(]", requirement.strip(), maxsplit=1)[0]


def dependency_folders(wheel: Path) -> list[Path]:
    """The folders that hold the wheel's (non-extra) dependencies, transitively, in this
    interpreter: what an isolated venv must see to run byocc. Skips when one is missing."""
    from importlib import metadata

    with zipfile.ZipFile(wheel) as zf:
        info = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        requires = [line.split(":", 1)[1] for line in zf.read(info).decode().splitlines()
                    if line.startswith("Requires-Dist:")]
    todo = [r for r in requires if "extra ==" not in r]
    seen: set[str] = set()
    folders: list[Path] = []
    while todo:
        requirement = todo.pop()
        name = _requirement_name(requirement).lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if ";" in requirement:  # a marker (platform, Python version) may exclude it here
                continue
            pytest.skip(f"dependency {name} is not installed in this interpreter")
        folder = Path(str(dist.locate_file(""))).resolve()
        if folder not in folders:
            folders.append(folder)
        todo += [r for r in (dist.requires or []) if "extra ==" not in r]
    return folders


def test_installed_wheel_runs_from_another_directory(wheel: Path, tmp_path: Path):
    env_dir = tmp_path / "venv"
    # An isolated venv (no system site-packages: its base Python may lack the dependencies):
    # byocc comes only from the wheel, its dependencies from the folders this interpreter
    # finds them in, named by a .pth file (listed after the venv's own site-packages, so the
    # wheel's byocc wins over any byocc installed there; their .pth files are not run, so an
    # editable install's finder stays out). --ignore-installed: pip must not count a byocc
    # of this interpreter as satisfying the wheel.
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site_packages = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip()
    Path(site_packages, "byocc_test_dependencies.pth").write_text(
        "".join(f"{folder}\n" for folder in dependency_folders(wheel)))
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
         "--no-index", "--ignore-installed", "-q", str(wheel)],
        capture_output=True, text=True, check=False,
    )
    if install.returncode != 0 and "no such option: --python" in install.stderr:
        pytest.skip("pip too old for --python")
    assert install.returncode == 0, install.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    sample = ROOT / "samples" / "seed.relax"
    where = subprocess.run(
        [str(python), "-c", "import byocc, sys; sys.stdout.write(byocc.__file__)"],
        cwd=elsewhere, capture_output=True, text=True, check=True,
    )
    assert where.stdout.startswith(str(env_dir)), where.stdout
    show = subprocess.run([str(env_dir / "bin" / "byocc"), "show", str(sample)],
                          cwd=elsewhere, capture_output=True, text=True, check=False)
    assert show.returncode == 0, show.stderr
    assert show.stdout == sample.read_text()
    version = subprocess.run([str(env_dir / "bin" / "byocc"), "--version"],
                             cwd=elsewhere, capture_output=True, text=True, check=True)
    assert version.stdout == f"byocc {byocc.__version__}\n"
