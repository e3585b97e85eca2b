"""The README's first example is the workflow a newcomer copies: it must run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow
def test_readme_workflow_example_runs(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README.md has no python example"
    monkeypatch.chdir(tmp_path)  # an empty folder, as a fresh clone's user has: the example makes out/ itself
    assert not any(tmp_path.iterdir())
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)  # noqa: S102 - our own documentation
    assert namespace["prog"].mode and namespace["step"].simulated_time_s > 0
    assert (tmp_path / "out" / "trace.json").exists() and (tmp_path / "out" / "gpt2.akp" / "manifest.json").exists()
