"""ModelBox: a compiled model packed in one folder, ready to run with parameters a person can edit.

    accelkit box out/mlp.akp out/mlp-box          # or accelkit.box.make_box("out/mlp.akp", "out/mlp-box")
    out/mlp-box/
        model.akp/     the artifact, copied (manifest.json, weights.safetensors, cli.json)
        box.yaml       the model spec, the target, and the parameters with their legal values
        run.py         python run.py  ->  accelkit.box.run_box(Path(__file__).parent)

``box.yaml`` is read with ``yaml.safe_load`` (plain data only). Its legal values are derived from the
artifact — the compiled target, precision and batch — and ``run_box`` checks every parameter
against the artifact itself, not against the list in the file, so editing the list changes
nothing. A value outside them is refused with the legal ones listed. The folder holds no model
code: ``model`` names a ``module:factory`` (or ``zoo:NAME``) that must be importable where the box
runs; copy the box anywhere that holds.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from accelkit.boundary import divisors
from accelkit.runner import (
    CLI_JSON,
    RunResult,
    UsageError,
    recorded_cli,
    resolve_factory,
    run_artifact,
    trusted_spec,
)

BOX_YAML = "box.yaml"
RUNNER = "run.py"
ARTIFACT_DIR = "model.akp"
BOX_VERSION = 1
FIXED_KEYS = ("box_version", "model", "artifact", "example_inputs", "legal")
PARAMETERS = ("target", "precision", "batch_size", "steps", "seed")

RUN_PY = '''"""Run this ModelBox: python run.py [--spec module:factory] [--debug]  (edit box.yaml to change its
parameters; --spec names the model code, needed unless box.yaml's model is a zoo:NAME model)."""

import sys
from pathlib import Path

from accelkit.box import run_box
from accelkit.runner import guard



def main() -> int:
    spec = sys.argv[sys.argv.index("--spec") + 1] if "--spec" in sys.argv[:-1] else None
    print(run_box(Path(__file__).parent, spec=spec))
    return 0


if __name__ == "__main__":
    sys.exit(guard(main, prog="run.py", debug="--debug" in sys.argv))
'''


class BoxError(UsageError):
    """A box that cannot be made or run as configured: names the file, the value and the legal ones."""


def legal_values(prog: Any) -> dict[str, Any]:
    """What the compiled program allows: its target and precision; its batch or a divisor of it
    (a multiple of the data-parallel replicas, so each replica gets whole samples); steps ≥ 1."""
    batch, replicas = prog.batch_size, prog.parallel.data
    return {
        "target": [prog.spec.name],
        "precision": [prog.precision],
        "batch_size": [d for d in divisors(batch) if d % replicas == 0],  # from its factors: 10**12 is quick
        "steps": {"min": 1},
        "seed": {"min": 0},
    }


def _show(v: Any) -> str:
    return json.dumps(v)  # JSON scalars and lists are valid YAML


def make_box(artifact: str | os.PathLike[str], dir: str | os.PathLike[str], *, spec: str | None = None,
             steps: int = 10) -> Path:
    """Write a ModelBox for ``artifact`` into ``dir`` (new or empty); returns its path.

    ``spec`` is the model code (``module:factory`` or ``zoo:NAME``); by default the one ``cli.json``
    records (artifacts compiled by ``accelkit compile``). The artifact is checked with ``ak.load``
    and the spec is imported (not called) before anything is written.
    """
    from accelkit.compiler.artifact import MANIFEST, WEIGHTS, load
    from accelkit.runtime.session import PRECISION_DTYPES

    src, root = _folder(artifact, "artifact"), _folder(dir, "the box folder")
    prog = load(src)
    recorded = recorded_cli(src)
    if spec is None and recorded.get("spec"):
        spec = trusted_spec(recorded["spec"], None, str(src / "cli.json"), f"accelkit box {src} {root}")
    if not spec:
        raise BoxError(f"{src} does not record its model code (it was not compiled by `accelkit compile`)",
                       fix="pass spec='module:factory' (accelkit box ... --spec module:factory)")
    resolve_factory(spec)  # a spec that does not import fails here, not when the box runs
    if prog.precision not in PRECISION_DTYPES:
        raise BoxError(f"{src} is compiled in {prog.precision}, which this CPU cannot emulate",
                       fix=f"compile in one of {', '.join(PRECISION_DTYPES)} to box it")
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise BoxError(f"steps must be a whole number ≥ 1, got {steps!r}", fix="e.g. steps=10")
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise BoxError(f"{root} already exists and is not an empty folder",
                       fix="choose a new folder, or remove this one first")
    (root / ARTIFACT_DIR).mkdir(parents=True, exist_ok=True)
    for name in (MANIFEST, WEIGHTS, CLI_JSON):  # the artifact's own files only
        if (src / name).is_file():
            shutil.copy2(src / name, root / ARTIFACT_DIR / name)
    legal = legal_values(prog)
    inputs = recorded.get("inputs") if recorded.get("spec") == spec else None
    text = "\n".join([
        "# accelkit ModelBox: a compiled model, ready to run:  python run.py   or   accelkit run <this folder>",
        "# Edit the parameters below. Each must be one of its legal values (listed under `legal`, derived from",
        "# the artifact; run.py checks against the artifact itself, so editing `legal` changes nothing).",
        f"box_version: {BOX_VERSION}",
        f"model: {_show(spec)}  # the model code: module:factory (importable where the box runs) or zoo:NAME",
        f"artifact: {_show(ARTIFACT_DIR)}  # the compiled artifact (JSON + safetensors), inside this folder",
        f"example_inputs: {_show(inputs)}  # shapes for a factory that returns only a model (--inputs)",
        "",
        "# parameters",
        f"target: {_show(prog.spec.name)}  # fixed: the artifact is compiled for {prog.spec.name}",
        f"precision: {_show(prog.precision)}  # fixed: the precision the artifact is compiled in",
        f"batch_size: {prog.batch_size}  # the compiled batch ({prog.batch_size}) or a divisor: "
        + ", ".join(map(str, legal["batch_size"])),
        f"steps: {steps}  # inference steps, a whole number >= 1",
        "seed: 0  # seed of the random inputs, a whole number >= 0",
        "",
        "legal:",
        *(f"  {k}: {_show(v)}" for k, v in legal.items()),
        "",
    ])
    (root / BOX_YAML).write_text(text)
    (root / RUNNER).write_text(RUN_PY)
    return root


def read_box(dir: str | os.PathLike[str]) -> tuple[dict[str, Any], Any]:
    """``box.yaml`` (checked: every parameter one of the artifact's legal values) and the loaded artifact."""
    import yaml

    from accelkit.compiler.artifact import load

    root = _folder(dir, "the box folder")
    path = root / BOX_YAML
    if not path.is_file() and not path.is_symlink():
        raise BoxError(f"{root} is not a ModelBox: {BOX_YAML} is missing", fix="make one with `accelkit box`")
    _inside(root, BOX_YAML, BOX_YAML)
    try:
        cfg = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise BoxError(f"{path} is not plain YAML: {' '.join(str(exc).split())}",
                       fix="restore the file written by `accelkit box` and edit values only") from None
    if not isinstance(cfg, dict):
        raise BoxError(f"{path} does not hold a mapping of parameters", fix="restore it with `accelkit box`")
    unknown = sorted(set(map(str, cfg)) - {*FIXED_KEYS, *PARAMETERS})
    missing = [k for k in ("model", "artifact", *PARAMETERS) if k not in cfg]
    if unknown or missing:
        raise BoxError(f"{BOX_YAML}: " + "; ".join(
            ([f"unknown key(s) {', '.join(unknown)}"] if unknown else [])
            + ([f"missing key(s) {', '.join(missing)}"] if missing else [])),
            fix=f"the parameters are {', '.join(PARAMETERS)}")
    rel = cfg["artifact"]
    if not isinstance(rel, str) or PurePosixPath(rel).is_absolute() or ".." in PurePosixPath(rel).parts:
        raise BoxError(f"{BOX_YAML}: artifact {rel!r} must be a folder inside the box",
                       fix=f"artifact: {ARTIFACT_DIR}")
    if not isinstance(cfg["model"], str):
        raise BoxError(f"{BOX_YAML}: model {cfg['model']!r} is not a spec", fix="model: module:factory, or zoo:NAME")
    inputs = cfg.get("example_inputs")
    if inputs is not None and not (isinstance(inputs, list) and all(isinstance(s, str) for s in inputs)):
        raise BoxError(f"{BOX_YAML}: example_inputs must be a list of shapes or null",
                       fix='e.g. example_inputs: ["8x16:float32"]')
    prog = load(_inside(root, rel, f"{BOX_YAML}: artifact", folder=True))
    for key, allowed in legal_values(prog).items():
        check_parameter(key, cfg[key], allowed)
    return cfg, prog


def _folder(value: Any, what: str) -> Path:
    if not isinstance(value, (str, os.PathLike)) or isinstance(os.fspath(value), bytes) or not str(os.fspath(value)):
        raise BoxError(f"{what} must be a folder path (a str or pathlib.Path), not {type(value).__name__} {value!r}",
                       fix="e.g. run_box('out/mlp-box')")
    return Path(value)


def _inside(root: Path, name: str, what: str, *, folder: bool = False) -> Path:
    """``root / name``, refused unless it resolves (through every symlink) inside ``root`` and is a regular file
    (``folder``: a folder): a box you received must not make accelkit read, show or run anything outside it."""
    full = root / name
    real, base = full.resolve(), root.resolve()
    fix = f"restore the box (`accelkit box`): its files must be real files inside {root}"
    if not real.is_relative_to(base):
        raise BoxError(f"{what} {name!r} is a symlink to {real}, outside the box {root}; a box only reads files "
                       "inside its folder", fix=fix)
    if not (real.is_dir() if folder else real.is_file()):
        raise BoxError(f"{what} {name!r} is not a {'folder' if folder else 'regular file'} inside {root}", fix=fix)
    return full


def check_parameter(key: str, value: Any, allowed: Any) -> None:
    """Refuse ``value`` unless it is in ``allowed`` (a list) or a whole number ≥ ``allowed['min']``."""
    if isinstance(allowed, dict):
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= allowed["min"]
        legal = f"a whole number >= {allowed['min']}"
    else:
        ok = any(type(value) is type(a) and value == a for a in allowed)  # 8.0 is not the batch 8
        legal = ", ".join(map(str, allowed))
    if not ok:
        raise BoxError(f"{BOX_YAML}: {key} {value!r} is not allowed; legal values: {legal}",
                       fix=f"set {key} in {BOX_YAML} to one of the legal values (recompile to change them)")


def run_box(dir: str | os.PathLike[str], *, steps: int | None = None, spec: str | None = None) -> RunResult:
    """Run the ModelBox in ``dir`` as its ``box.yaml`` says (``steps`` overrides the file's).

    ``spec`` is the model code, named by you: the box's own ``model:`` is imported by itself only when it is
    a ``zoo:NAME`` model (a box you received could name any module; see :func:`accelkit.cli.trusted_spec`).
    """
    root = _folder(dir, "the box folder")
    cfg, prog = read_box(root)
    if steps is not None:
        check_parameter("steps", steps, {"min": 1})
    chosen = trusted_spec(cfg["model"], spec, str(root / BOX_YAML), f"accelkit run {root}")
    return run_artifact(root / cfg["artifact"], spec=chosen, steps=steps or cfg["steps"],
                        batch_size=cfg["batch_size"], seed=cfg["seed"], inputs=cfg.get("example_inputs"),
                        spec_from="--spec" if spec is not None else BOX_YAML, program=prog)


__all__ = ["BOX_YAML", "BoxError", "check_parameter", "legal_values", "make_box", "read_box", "run_box"]
