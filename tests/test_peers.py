"""accelkit.sim.peers: the measured rows it picks, its table without GenZ, and one GenZ case when installed."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from accelkit.sim import peers
from accelkit.sim.peers import PeerCase, PeerRow, PeersResult, compare_peers, peer_rows

HEADER = "Hardware,Num of Hardware,Framework,Model,Input Output Length,Batch Size,Latency,Throughput\n"
L3, L2 = "meta-llama/Meta-Llama-3-8B", "meta-llama/Llama-2-7b-hf"


def _csv(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "All_results.csv"
    path.write_text(HEADER + "".join(line + "\n" for line in lines))
    return path


def test_peer_rows_pick_the_best_framework_per_configuration(tmp_path: Path) -> None:
    path = _csv(tmp_path, [
        f"Nvidia A100 GPU,1,vLLM,{L3},128,16,2.2,900",
        f"Nvidia A100 GPU,1,TensorRT-LLM,{L3},128,16,2.0,1000",  # the best of the three
        f"Nvidia A100 GPU,1,Deepspeed-MII,{L3},128,16,2.7,700",
        f"Nvidia H100 GPU,1,vLLM,{L2},1024,1,7.8,130",  # only one framework
        f"Nvidia A100 GPU,4,TensorRT-LLM,{L3},128,16,0.5,4000",  # 4 GPUs: not a case
        f"Nvidia GH200 GPU,1,TensorRT-LLM,{L3},128,16,0.9,2000",  # not a compared system
        f"Nvidia A100 GPU,1,TensorRT-LLM,{L3},256,16,3.0,1300",  # not a compared length
        f"Nvidia A100 GPU,1,TensorRT-LLM,{L3},128,32,3.0,1300",  # not a compared batch
        "Nvidia A100 GPU,1,TensorRT-LLM,mistralai/Mistral-7B-v0.1,128,16,1.0,2000",  # not a compared model
        f"Nvidia A100 GPU,1,vLLM,{L3},128,1,,",  # no latency
    ])
    rows = peer_rows(path)
    assert rows == [PeerCase("Nvidia A100 GPU", L3, 128, 16, 2.0, "TensorRT-LLM"),
                    PeerCase("Nvidia H100 GPU", L2, 1024, 1, 7.8, "vLLM")]
    assert rows[0].name == "A100 llama3-8b n=128 b=16"
    assert peer_rows(path, frameworks=["vLLM"])[0] == PeerCase("Nvidia A100 GPU", L3, 128, 16, 2.2, "vLLM")


def test_the_reference_dir_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "llm_inference_bench").mkdir()
    _csv(tmp_path / "llm_inference_bench", [f"Nvidia H100 GPU,1,vLLM,{L3},128,64,1.7,5000"])
    monkeypatch.setenv(peers.REFERENCE_DIR_ENV, str(tmp_path))
    assert peers.reference_csv() == tmp_path / "llm_inference_bench" / "All_results.csv"
    assert [r.batch for r in peer_rows()] == [64]


@pytest.mark.skipif(not peers.reference_csv().exists(), reason="../shared/reference is not present")
def test_the_shared_csv_gives_the_fixed_case_set() -> None:
    rows = peer_rows()
    assert len(rows) == len(peers.SYSTEMS) * len(peers.MODELS) * len(peers.LENGTHS) * len(peers.BATCHES)
    assert all(r.measured_s > 0 for r in rows)


def test_the_table_prints_without_genz() -> None:
    rows = [PeerRow("A100 llama3-8b n=128 b=1", "A100", L3, 128, 1, "TensorRT-LLM", 1.78, 1.34, None),
            PeerRow("A100 llama3-8b n=128 b=16", "A100", L3, 128, 16, "TensorRT-LLM", 2.04, 1.55, None)]
    result = PeersResult(rows, genz_version=None)
    text = result.table()
    assert "A100 llama3-8b n=128 b=16" in text and "pip install -e '.[peers]'" in text
    assert result.median_abs_error("genz", "A100") is None and result.ahead("A100") is None
    assert result.median_abs_error("accelkit", "A100") == pytest.approx((0.44 / 1.78 + 0.49 / 2.04) / 2)
    assert "<table>" in result._repr_html_()


def test_the_medians_are_over_the_cases_both_tools_predict() -> None:
    rows = [PeerRow("a", "A100", L2, 128, 1, "vLLM", 1.0, 1.1, 1.3),  # accelkit +10%, GenZ +30%
            PeerRow("b", "A100", L2, 128, 16, "vLLM", 1.0, 1.2, 0.6),  # accelkit +20%, GenZ -40%
            PeerRow("c", "A100", L2, 1024, 64, "vLLM", 1.0, 3.0, None)]  # GenZ could not run it
    result = PeersResult(rows, genz_version="0.0.16")
    assert result.cases("A100") == 2 and result.cases("A100", shared=False) == 3
    assert result.median_abs_error("accelkit", "A100") == pytest.approx(0.15)
    assert result.median_abs_error("accelkit", "A100", shared=False) == pytest.approx(0.2)
    assert result.median_abs_error("genz", "A100") == pytest.approx(0.35)
    assert result.ahead("A100") is True
    assert "medians over the 2 cases both tools predict; accelkit over all 3: 20%" in result.table()


def test_compare_peers_without_genz_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peers, "genz_version", lambda: None)
    monkeypatch.setattr(peers, "accelkit_latency", lambda case, model: 1.0)
    monkeypatch.setattr(peers, "build_model", lambda name: None)
    case = PeerCase("Nvidia H100 GPU", L3, 128, 1, 0.9, "TensorRT-LLM")
    result = compare_peers([case], progress=False)
    assert result.rows[0].genz is None and not result.genz_available
    assert peers.INSTALL_HINT in result.table()


def test_a_genz_failure_is_a_note_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(case: PeerCase) -> tuple[float, float, float]:
        raise ValueError("All params would not fit on chip")

    monkeypatch.setattr(peers, "genz_version", lambda: "0.0.16")
    monkeypatch.setattr(peers, "genz_latency", broken)
    monkeypatch.setattr(peers, "accelkit_latency", lambda case, model: 1.0)
    monkeypatch.setattr(peers, "build_model", lambda name: None)
    result = compare_peers([PeerCase("Nvidia H100 GPU", L3, 128, 1, 0.9, "vLLM")], progress=False)
    assert result.rows[0].genz is None
    assert any("GenZ failed on H100 llama3-8b n=128 b=1: ValueError" in n for n in result.notes)


def test_a_batch_accelkit_refuses_is_left_out_with_a_note() -> None:
    """The real serve: Llama-2-7B (full multi-head KV, 1 GB per sequence) at batch 64 does not fit one A100 40 GB."""
    case = PeerCase("Nvidia A100 GPU", "meta-llama/Llama-2-7b-hf", 1024, 64, 18.6, "TensorRT-LLM")
    result = compare_peers([case], progress=False)
    assert result.rows == []
    assert any("accelkit refused A100 llama2-7b n=1024 b=64" in n and "does not fit" in n for n in result.notes)


def test_one_genz_case_gives_a_positive_finite_latency() -> None:
    pytest.importorskip("GenZ")
    prefill, decode, total = peers.genz_latency(PeerCase("Nvidia A100 GPU", L2, 128, 16, 1.8, "TensorRT-LLM"))
    assert 0 < prefill < total and 0 < decode and math.isfinite(total)
    assert total == pytest.approx(prefill + 128 * decode)
