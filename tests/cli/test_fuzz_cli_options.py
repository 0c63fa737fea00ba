"""The CLI as a whole under random options and file kinds (issue 9): whatever the command
line, byocc ends with exit 0, 1 or 2 and a message, never a Python traceback or exit 70.

Each trial picks a command, a MODEL of some kind (a sample, its ONNX, a folder, a missing
file, a binary file, an empty file, stdin, a symlink, a fifo-less special file), and random
values for a few of the command's options (numbers out of range, negative, huge, not
numbers; choices misspelt; output paths that are inputs, folders, missing folders,
symlinks, ``-``; ``--codegen-option`` items valid, malformed, unknown or contradicting).
Derandomised: the same trials every run.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from click.testing import CliRunner

from byocc.cli import cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
N_TRIALS = 150


def _files(tmp: Path) -> dict[str, str]:
    shutil.copy(SAMPLES / "seed.relax", tmp / "seed.relax")
    shutil.copy(SAMPLES / "seed_patterns.py", tmp / "p.py")
    shutil.copy(SAMPLES / "small_cnn.onnx", tmp / "cnn.onnx")
    (tmp / "empty.relax").write_text("")
    (tmp / "binary.relax").write_bytes(bytes(range(256)))
    (tmp / "binary.py").write_bytes(b"\x00\xff")
    (tmp / "folder").mkdir()
    (tmp / "afile").write_text("x\n")
    (tmp / "link.relax").symlink_to("seed.relax")
    (tmp / "dangling").symlink_to("nowhere")
    return {
        "seed": str(tmp / "seed.relax"), "onnx": str(tmp / "cnn.onnx"), "empty": str(tmp / "empty.relax"),
        "binary": str(tmp / "binary.relax"), "folder": str(tmp / "folder"), "missing": str(tmp / "nope.relax"),
        "link": str(tmp / "link.relax"), "stdin": "-", "devnull": "/dev/null",
    }


def _value(rng: random.Random, kind: str, tmp: Path, files: dict[str, str]) -> str:
    if kind == "int":
        return rng.choice(["-5", "-1", "0", "1", "3", "2147483648", "100000000000000000000", "abc", "1.5", ""])
    if kind == "dim":
        return rng.choice(["n=-3", "n=3", "n=100000000000", "b=2", "=3", "n", "n=x", "1n=2", "n=3=4"])
    if kind == "path_choice":
        return rng.choice(["annotate", "merge", "foo", "", "MERGE"])
    if kind == "backend":
        return rng.choice(["cutlass", "cublas", "cutlas", "", "nosuch"])
    if kind == "layout":
        return rng.choice(["NHWC", "none", "NCHW", ""])
    if kind == "out_file":
        return rng.choice([files["seed"], str(tmp / "seed.npz"), str(tmp / "folder"), str(tmp / "nodir" / "x"),
                           str(tmp / "afile" / "x"), str(tmp / "new.out"), str(tmp / "link.relax"),
                           str(tmp / "dangling"), "-", "/dev/null", ""])
    if kind == "out_dir":
        return rng.choice([str(tmp / "afile"), str(tmp / "outdir"), str(tmp / "folder"), "-", "", str(tmp / "p.py")])
    if kind == "patterns":
        return rng.choice([str(tmp / "p.py"), str(tmp / "binary.py"), str(tmp / "folder"), str(tmp / "nope.py"),
                           files["seed"]])
    if kind == "codegen_option":
        return rng.choice(VALID_CODEGEN_OPTIONS + INVALID_CODEGEN_OPTIONS)
    if kind == "entry":
        return rng.choice(["main", "nope", "", "forward"])
    raise AssertionError(kind)


#: ``--codegen-option`` values: accepted ones (alone; two of them may contradict each other,
#: a usage error too), and ones its parser refuses (malformed, unknown backend or key, a
#: value outside the key's choices): those always end with exit 2.
VALID_CODEGEN_OPTIONS = ["cublas.fp32_math=tf32", "cublas.fast_gelu=true", "cublas.exact_gelu=true",
                         "cutlass.arch=sm_80", "cutlass.arch=sm_90a,sm_80", " cublas.fp32_math = ieee "]
INVALID_CODEGEN_OPTIONS = ["cublas.fp32_math=tf16", "cublas.nosuch=1", "nosuch.arch=sm_80", "cutlass.arch=sm_70",
                           "cublas.fast_gelu=maybe", "fp32_math=tf32", "cublas.fp32_math", "=", "", ".=x",
                           "cublas.=1", "cutlass.arch=", "cublas.fast_gelu=1=2", "\x00.x=y"]

OPTIONS = {
    "run": [("--random-inputs", "int"), ("--dim", "dim"), ("-o", "out_file"), ("--entry", "entry"),
            ("--inputs", "out_file")],
    "verify": [("--seed", "int"), ("--trials", "int"), ("--dim", "dim"), ("--path", "path_choice"),
               ("--backend", "backend"), ("--layout", "layout"), ("--patterns", "patterns"), ("--entry", "entry")],
    "partition": [("--path", "path_choice"), ("--backend", "backend"), ("--layout", "layout"),
                  ("--patterns", "patterns"), ("--explain-json", "out_file"), ("-o", "out_dir"),
                  ("--dump-ir", "out_dir"), ("--entry", "entry"),
                  ("--codegen-option", "codegen_option"), ("--codegen-option", "codegen_option")],
    "import": [("-o", "out_file")],
    "show": [],
    "check": [],
}


def test_random_command_lines_never_crash(tmp_path):
    rng = random.Random(9)
    files = _files(tmp_path)
    seen_codes: dict[int, int] = {}
    codegen_trials = {"accepted": 0, "refused": 0}
    for trial in range(N_TRIALS):
        command = rng.choice(sorted(OPTIONS))
        model = files[rng.choice(sorted(files))] if command != "import" else rng.choice(
            [files["onnx"], files["seed"], files["binary"], files["missing"], files["folder"]])
        args = [command, model]
        for option, kind in rng.sample(OPTIONS[command], k=min(len(OPTIONS[command]), rng.randint(0, 3))):
            args += [option, _value(rng, kind, tmp_path, files)]
        if command in ("verify", "partition") and rng.random() < 0.8:
            args += ["--patterns", str(tmp_path / "p.py")]
        if command == "verify":
            args += ["--trials", "1"]
        stdin = (SAMPLES / "seed.relax").read_text() if model == "-" and rng.random() < 0.7 else ""
        shutil.copy(SAMPLES / "seed.relax", tmp_path / "seed.relax")  # an earlier -o may have written it
        shutil.copy(SAMPLES / "seed_patterns.py", tmp_path / "p.py")
        inputs = [Path(a) for a in args[1:] if Path(a).is_file() and a in (model, str(tmp_path / "p.py"))]
        before = {p: p.read_bytes() for p in inputs}
        result = CliRunner().invoke(cli, args, input=stdin)
        seen_codes[result.exit_code] = seen_codes.get(result.exit_code, 0) + 1
        context = (trial, args, result.output[-2000:])
        assert result.exit_code in (0, 1, 2), context
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            context, repr(result.exception))
        assert "Traceback" not in result.output and "internal error" not in result.output, context
        if result.exit_code:
            assert "error" in result.stderr.lower(), context
        refused = [v for o, v in zip(args, args[1:]) if o == "--codegen-option" and v in INVALID_CODEGEN_OPTIONS]
        if refused:
            assert result.exit_code == 2 and "--codegen-option" in result.stderr, context
        if "--codegen-option" in args:
            codegen_trials["refused" if refused else "accepted"] += 1
        assert {p: p.read_bytes() for p in inputs} == before, context  # inputs are never touched
    assert set(seen_codes) == {0, 1, 2}, seen_codes  # the trials reach success, input and usage errors
    assert sum(codegen_trials.values()) > 0, codegen_trials


def test_random_codegen_options_never_crash(tmp_path):
    """``partition --codegen-option`` (one to three, valid and invalid, with a backend that
    generates code or not, with and without ``-o``): exit 0, 1 or 2, never a traceback; a
    refused value is exit 2 naming the option; an accepted one reaches the manifest."""
    rng = random.Random(22)
    shutil.copy(SAMPLES / "mlp_fp16.relax", tmp_path / "mlp.relax")
    seen = {"accepted": 0, "refused": 0, "contradicted": 0}
    for trial in range(24):
        items = [rng.choice(VALID_CODEGEN_OPTIONS + INVALID_CODEGEN_OPTIONS) for _ in range(rng.randint(1, 3))]
        backend = rng.choice(["cublas", "cutlass", "cublas"])
        out = tmp_path / f"out{trial}"
        args = ["partition", str(tmp_path / "mlp.relax"), "--backend", backend]
        if rng.random() < 0.8:
            args += ["-o", str(out)]
        for item in items:
            args += ["--codegen-option", item]
        result = CliRunner().invoke(cli, args)
        context = (trial, args, result.output[-2000:])
        assert result.exit_code in (0, 1, 2), context
        assert result.exception is None or isinstance(result.exception, SystemExit), (context, repr(result.exception))
        assert "Traceback" not in result.output and "internal error" not in result.output, context
        if any(item in INVALID_CODEGEN_OPTIONS for item in items):
            assert result.exit_code == 2 and "--codegen-option" in result.stderr, context
            assert not out.exists(), context  # nothing written
            seen["refused"] += 1
        elif result.exit_code == 2:  # e.g. fast_gelu=true with exact_gelu=true
            assert "--codegen-option" in result.stderr and "error" in result.stderr.lower(), context
            seen["contradicted"] += 1
        else:
            assert result.exit_code == 0, context
            seen["accepted"] += 1
            if "-o" in args:
                import json

                used = json.loads((out / "manifest.json").read_text())["codegen_options"][backend]
                last = {}
                for item in items:
                    name, value = (part.strip() for part in item.split("=", 1))
                    if name.startswith(backend + "."):
                        last[name.split(".", 1)[1]] = value
                if "fp32_math" in last:
                    assert used["fp32_math"] == last["fp32_math"], context
    assert min(seen.values()) >= 1, seen
