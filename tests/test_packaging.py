"""The ways into the project agree: pyproject.toml, environment.yml, constraints.txt, .ci/run, README."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PIP_OPTIONS = {"-e .", "-c constraints.txt"}  # environment.yml's pip lines that are not dependencies


def _key(spec: str) -> tuple[str, str, str, str]:
    """A requirement in a form where spelling does not matter: PyYAML>=6 == pyyaml >= 6."""
    req = Requirement(spec)
    return (canonicalize_name(req.name), ",".join(sorted(str(s) for s in req.specifier)),
            ",".join(sorted(req.extras)), str(req.marker or ""))


def _pyproject_deps() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return list(project["dependencies"]) + list(project["optional-dependencies"]["dev"])


def _environment() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def _environment_pip_lines() -> list[str]:
    pip = [d["pip"] for d in _environment()["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip) == 1, "environment.yml needs exactly one `pip:` section"
    return [str(line).strip() for line in pip[0]]


def _constraints() -> dict[str, Requirement]:
    pins: dict[str, Requirement] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            pins[canonicalize_name(req.name)] = req
    return pins


def _exact_pin(req: Requirement) -> str | None:
    specs = list(req.specifier)
    return specs[0].version if len(specs) == 1 and specs[0].operator == "==" else None


def test_environment_yml_matches_pyproject() -> None:
    env = _environment()
    assert env["name"] == "accelkit"
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    assert "python=3.11" in conda and "pip" in conda, conda

    lines = _environment_pip_lines()
    assert "-e ." in lines, "environment.yml must install accelkit itself (`-e .`)"
    env_deps = [line for line in lines if line not in PIP_OPTIONS]
    py_deps = _pyproject_deps()
    for name, deps in (("environment.yml", env_deps), ("pyproject.toml", py_deps)):
        names = [_key(d)[0] for d in deps]
        assert len(names) == len(set(names)), f"{name} lists a package twice: {sorted(names)}"

    env_keys, py_keys = {_key(d) for d in env_deps}, {_key(d) for d in py_deps}
    assert env_keys == py_keys, (
        "environment.yml and pyproject.toml ([project].dependencies + the `dev` extra) disagree:\n"
        f"  only in pyproject.toml:  {sorted(py_keys - env_keys)}\n"
        f"  only in environment.yml: {sorted(env_keys - py_keys)}"
    )


def test_torch_pinned_to_one_version_everywhere() -> None:
    found = {
        "pyproject.toml": [Requirement(d) for d in _pyproject_deps()],
        "constraints.txt": list(_constraints().values()),
        "environment.yml": [Requirement(d) for d in _environment_pip_lines() if d not in PIP_OPTIONS],
    }
    versions = {}
    for source, reqs in found.items():
        torch = [r for r in reqs if canonicalize_name(r.name) == "torch"]
        assert len(torch) == 1, f"{source}: expected one torch requirement, found {[str(r) for r in torch]}"
        versions[source] = _exact_pin(torch[0])
        assert versions[source], f"{source}: torch must be pinned with ==, found {torch[0]}"
    assert len(set(versions.values())) == 1, f"torch pins differ: {versions}"


def test_constraints_pin_every_direct_dependency() -> None:
    pins = _constraints()
    for dep in _pyproject_deps():
        req = Requirement(dep)
        name = canonicalize_name(req.name)
        assert name in pins, f"constraints.txt has no pin for {req.name}"
        version = _exact_pin(pins[name])
        assert version, f"constraints.txt must pin {req.name} with ==, found {pins[name]}"
        assert req.specifier.contains(version, prereleases=True), \
            f"constraints.txt pins {req.name}=={version}, outside pyproject's {req.specifier}"


def test_ci_entry_point_is_make_test() -> None:
    path = ROOT / ".ci" / "run"
    assert os.access(path, os.X_OK), ".ci/run must be executable"
    boilerplate = re.compile(r"^(#.*|set\s+-[-\w\s]*|cd\s.*)$")  # comments, shebang, `set -euo`, `cd`
    substance = [s for s in (line.strip() for line in path.read_text().splitlines())
                 if s and not boilerplate.match(s)]
    assert substance in (["make test"], ["exec make test"]), \
        f".ci/run must only call `make test`, found: {substance}"


FENCE = re.compile(r"^ {0,3}(```|~~~)[ \t]*([\w+-]*)[^\n]*\n(.*?)^ {0,3}\1[ \t]*$", re.MULTILINE | re.DOTALL)
SHELL_BLOCKS = {"", "sh", "bash", "shell", "zsh", "console", "shell-session"}


def readme_commands(markdown: str) -> list[str]:
    """Shell command lines of the fenced blocks in `markdown`, in order (prompts and comments dropped)."""
    commands = []
    for match in FENCE.finditer(markdown):
        lang = match.group(2).lower()
        if lang not in SHELL_BLOCKS:
            continue
        for line in match.group(3).splitlines():
            line = line.strip()
            if lang in {"console", "shell-session"} and not line.startswith("$"):
                continue  # program output, not a command
            line = re.sub(r"\s+#.*$", "", line.removeprefix("$").strip())
            if line and not line.startswith("#"):
                commands.append(line)
    return commands


def test_readme_commands_helper() -> None:
    text = "# x\n\n```python\nimport accelkit\n```\n\n```bash\n# set up\n$ make lab   # opens Lab\n```\n" \
           "\n```console\n$ make test\n4 passed\n```\n"
    assert readme_commands(text) == ["make lab", "make test"]


def test_readme_starts_with_make_lab_then_make_test() -> None:
    readme = ROOT / "README.md"
    if not readme.exists():
        pytest.fail("README.md is missing; it should open with `make lab` then `make test`", pytrace=False)
    commands = readme_commands(readme.read_text())
    assert commands[:2] == ["make lab", "make test"], \
        f"README.md's first shell commands should be `make lab` then `make test`, found {commands[:2]}"
