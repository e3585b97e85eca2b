"""The bridge to the real machines: docs/real_machines.md is what accelkit.teach.bridge generates, every
vendor row has a source, and notebook 10 runs the example app for training (compile -> run -> test: its loss
falls, it matches plain PyTorch) with its exercises solved when solutions are applied. The inference app is in
test_rdu_example_app.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from accelkit.teach import bridge

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "10_on_the_real_machines.ipynb"


def test_docs_page_is_generated_from_the_bridge():
    assert (ROOT / "docs" / "real_machines.md").read_text() == bridge.markdown(), \
        "regenerate: python -m accelkit.teach.bridge > docs/real_machines.md"


def test_every_vendor_names_its_real_commands_and_sources():
    text = bridge.markdown()
    for needle in ("python app.py compile -b 64 -mb 4 --pef-name", "run -b 64 -mb 4 --pef=", "app.py test",
                   "measure-performance", "srun", "sbatch", "--compile_only", "--validate_only", "params.yaml",
                   "poprun", "--num-replicas", "deviceIterations", "gradientAccumulation", "groqit(",
                   "estimate_performance()"):
        assert needle in text, needle
    for vendor in bridge.BRIDGE:
        assert vendor.sources and all("http" in s for s in vendor.sources)
        assert vendor.launcher and len(vendor.commands) >= 4


def test_run_app_reports_a_failing_command(tmp_path):
    with pytest.raises(RuntimeError, match="exit 2"):
        bridge.run_app(ROOT / "examples" / "rdu_classifier_app.py", "run", cwd=tmp_path)  # no --pef


@pytest.mark.notebook
@pytest.mark.slow
def test_notebook_10_with_solutions(tmp_path_factory):
    from notebook_runs import RUNS, executed, output_text, runs_dir

    # the notebook's one run in make test, shared with its golden cells and the browser test
    text = output_text(executed("10", RUNS["10"], runs_dir(tmp_path_factory)))
    assert "test against plain PyTorch passed: True" in text
    assert "Exercise 10.recompile" in text and "Solved (with the shipped solution)." in text
    assert "Exercise 10.commands" in text and text.count("Solved (with the shipped solution).") == 2
    assert "compile again: the batch size: 32 -> 64" in text
    # the example app, as the notebook runs it (compile -b 32 -mb 4, run, test): it trains, and matches PyTorch
    assert "micro-batches of 4" in text and "'manifest.json'" in text
    losses = re.search(r"first loss (\d+\.\d+) last loss (\d+\.\d+)", text)
    assert losses and float(losses.group(2)) < float(losses.group(1)), text[-3000:]
    assert "MODELLED on sn40l" in text and "192 steps" in text
    assert "(the oracle)" in text and "-> PASS" in text


def test_glossary_sits_beside_the_notebooks_and_names_the_vendor_words():
    text = (ROOT / "notebooks" / "glossary.md").read_text()  # beside them: JupyterLab's root is notebooks/
    for term in ("HBM", "SRAM", "PCU / PMU", "PEF", "section", "tile", "superstep", "exchange", "weight streaming",
                 "MemoryX", "ATen", "roofline", "ridge point", "TTFT", "device iterations", "replication"):
        assert f"**{term}**" in text, term
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        for target in re.findall(r"\]\(([^)#]+\.(?:md|ipynb))\)", nb.read_text()):
            assert (nb.parent / target).is_file(), f"{nb.name} links to {target}, which is not beside it"
