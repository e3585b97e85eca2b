"""optimum.graphcore (Hugging Face's IPUTrainer) on the PopTorch facade: Graphcore's ViT walkthrough's shape, run
through the launcher with --synthetic-data on a generated NIH chest X-ray folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from accelkit.vendor import run_script
from accelkit.vendor.chest_xray import CSV_NAME, LABELS, write_chest_xray

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "vendor" / "optimum_vit.py"


@pytest.fixture(scope="module")
def xray(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("data") / "chest-xray-nihcc"
    write_chest_xray(folder, count=120)
    return folder


def test_chest_xray_folder_has_nih_layout_and_labels(xray: Path) -> None:
    import pandas as pd

    table = pd.read_csv(xray / CSV_NAME)
    assert list(table.columns)[:2] == ["Image Index", "Finding Labels"] and len(table) == 120
    names = {n for row in table["Finding Labels"] for n in row.split("|")}
    assert names <= set(LABELS) and "No Finding" in names and len(names) >= 12
    assert any("|" in row for row in table["Finding Labels"])  # multi-label rows, "A|B"
    assert all((xray / "images" / f).is_file() for f in table["Image Index"])


def test_vit_walkthrough_shape_trains_logs_checkpoints_and_evaluates(xray: Path, tmp_path: Path) -> None:
    run = run_script(SCRIPT, ["--dataset-dir", str(xray), "--output-dir", str(tmp_path / "out")],
                     synthetic_data=True, quiet=True, max_calls=40)
    assert run.exit_code == 0, run.error
    out = run.output or ""
    # the losses the trainer printed, read back by the script with json.loads as the walkthrough does
    assert "logged 3 losses: " in out and "at epoch" in out
    assert "***** eval metrics *****" in out and "eval_roc_auc" in out and "eval_loss" in out
    results = json.loads((tmp_path / "out" / "eval_results.json").read_text())
    assert 0.0 <= results["eval_roc_auc"] <= 1.0 and results["eval_runtime"] > 0
    # save_steps=3 with save_total_limit=1: only the last checkpoint is kept, with what optimum-graphcore writes
    ckpt = tmp_path / "out" / "checkpoint-6"
    assert not (tmp_path / "out" / "checkpoint-3").exists()
    for name in ("config.json", "ipu_config.json", "preprocessor_config.json", "trainer_state.json",
                 "optimizer.safetensors", "optimizer.json", "scheduler.json", "training_args.json"):
        assert (ckpt / name).is_file(), name
    assert not [p.name for p in ckpt.iterdir() if p.suffix in (".pt", ".bin", ".pkl")]  # no pickles written
    assert json.loads((ckpt / "ipu_config.json").read_text())["gradient_accumulation_steps"] == 2  # the override
    # the modelled report: the ViT pipelined over the 4 IPUs of Graphcore/vit-base-ipu, in fp16
    train = next(text for label, text in run.reports if label.startswith("trainingModel(ViTForImageClassification"))
    assert "pipeline over 4 IPUs" in train and "IPU 0 (Embedding)" in train and "(Classifier)" in train
    assert "MODELLED on gc200" in train and "fp16" in train and "gradientAccumulation 2" in train
    assert any("Graphcore/vit-base-ipu" in s for s in run.substitutions)
    assert "optimum" not in sys.modules and "optimum.graphcore" not in sys.modules


def test_max_calls_stops_the_trainer_at_a_step(xray: Path, tmp_path: Path) -> None:
    run = run_script(SCRIPT, ["--dataset-dir", str(xray), "--output-dir", str(tmp_path / "out")],
                     synthetic_data=True, quiet=True, max_calls=2)
    assert run.exit_code == 0 and "stopped at its call 3" in run.stopped
    assert "2 steps" in next(text for label, text in run.reports if label.startswith("trainingModel("))


def test_missing_dataset_names_the_command_and_unimplemented_api_is_refused(tmp_path: Path) -> None:
    run = run_script(SCRIPT, ["--dataset-dir", str(tmp_path / "none")], synthetic_data=True, quiet=True)
    assert run.exit_code == 1 and "python -m accelkit.vendor.chest_xray" in (run.error or "")
    assert "optimum_vit.py" in (run.error or "") and "pd.read_csv" in (run.error or "")
    script = tmp_path / "pipe.py"
    script.write_text("import optimum.graphcore as og\nog.pipeline('text-classification')\n")
    run = run_script(script, synthetic_data=True, quiet=True)
    assert run.exit_code == 1 and "OptimumGraphcoreError" in (run.error or "") and "pipeline" in (run.error or "")
    script.write_text("from optimum.graphcore.modeling_utils import PipelineMixin\n")
    run = run_script(script, quiet=True)
    assert run.exit_code == 1 and "not simulated by accelkit" in (run.error or "")
    script.write_text("import optimum.graphcore as og\nog.IPUConfig.from_pretrained('Graphcore/vit-base-ipu')\n")
    run = run_script(script, quiet=True)  # a Hub download without --synthetic-data
    assert run.exit_code == 1 and "--synthetic-data" in (run.error or "")


def test_ipu_config_fields_options_and_layer_split() -> None:
    from accelkit.facades.poptorch.optimum import (
        IncompatibleIPUConfigError,
        IPUConfig,
        _expand_layers_per_ipu,
    )

    cfg = IPUConfig(layers_per_ipu=[1, 3, -1, -1], gradient_accumulation_steps=8, device_iterations=2,
                    inference_device_iterations=4, replication_factor=2)
    assert cfg.ipus_per_replica == 4 and cfg.batch_size_factor() == 32 and cfg.batch_size_factor(True) == 4
    assert _expand_layers_per_ipu(cfg, 12) == [1, 3, 4, 4]
    assert _expand_layers_per_ipu(IPUConfig(ipus_per_replica=4), 2) == [0, 0, 0, 2]  # optimum-graphcore's split
    opts = cfg.to_options()
    assert (opts.replication_factor, opts.device_iterations, opts.Training.gradient_accumulation) == (2, 2, 8)
    assert cfg.to_options(for_inference=True).device_iterations == 4
    with pytest.raises(IncompatibleIPUConfigError):
        IPUConfig(layers_per_ipu=[2, 2], ipus_per_replica=4)
    with pytest.raises(IncompatibleIPUConfigError):
        IPUConfig(not_a_field=1)
    with pytest.raises(IncompatibleIPUConfigError):
        _expand_layers_per_ipu(IPUConfig(layers_per_ipu=[1, 1]), 3)


def test_checkpoint_state_round_trips_without_pickles_and_a_pickled_one_is_refused(tmp_path: Path) -> None:
    """The optimizer's state goes to safetensors + JSON and comes back equal (integer keys, tuples as lists); a
    checkpoint holding Hugging Face's pickled optimizer.pt is refused on resume, naming the file."""
    from accelkit.facades.poptorch import optimum

    model = torch.nn.Linear(4, 3)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99))
    model(torch.randn(5, 4)).sum().backward()
    opt.step()
    optimum._save_state(opt.state_dict(), tmp_path / "optimizer")
    back = optimum._load_state(tmp_path / "optimizer")
    fresh = torch.optim.AdamW(model.parameters(), lr=1e-3)
    fresh.load_state_dict(back)
    for k, st in opt.state_dict()["state"].items():
        assert torch.equal(fresh.state_dict()["state"][k]["exp_avg"], st["exp_avg"])
    assert fresh.param_groups[0]["betas"][1] == 0.99

    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "optimizer.pt").write_bytes(b"not loaded")
    trainer = object.__new__(optimum.IPUTrainer)
    with pytest.raises(optimum.OptimumGraphcoreError, match="optimizer.pt, a pickle"):
        trainer._load_checkpoint(str(tmp_path / "ckpt"))


GLUE = Path(__file__).resolve().parents[1] / "examples" / "vendor" / "optimum_glue.py"


def test_run_glue_shape_pipelines_bert_over_the_hub_config_and_scores_sst2(tmp_path: Path) -> None:
    out = tmp_path / "sst2"
    run = run_script(GLUE, ["--model_name_or_path", "bert-base-cased", "--ipu_config_name", "Graphcore/bert-base-ipu",
                            "--task_name", "sst2", "--do_train", "--do_eval", "--max_seq_length", "32",
                            "--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "2",
                            "--max_steps", "2", "--max_eval_samples", "20", "--output_dir", str(out)],
                     synthetic_data=True, quiet=True, max_calls=40)
    assert run.exit_code == 0, run.error
    text = run.output or ""
    # optimum-graphcore's BERT layout: embeddings alone on IPU 0 ([0, 4, 4, 4] mapped onto the 2-layer stand-in),
    # the classifier on the last IPU, the word embedding's serialization recorded
    assert "Embedding  --> IPU 0 | Encoder 0  --> IPU 1 | Encoder 1  --> IPU 3 | Classifier Output --> IPU 3" in text
    assert "SerializedEmbedding in 2 slices" in text
    train = next(t for label, t in run.reports if label.startswith("trainingModel(BertForSequenceClassification"))
    assert "pipeline over 4 IPUs" in train and "IPU 3 (Classifier Output)" in train and "gradientAccumulation 2" in train
    results = json.loads((out / "eval_results.json").read_text())
    assert 0.0 <= results["eval_accuracy"] <= 1.0 and results["eval_samples"] == 20
    assert (out / "README.md").is_file() and (out / "model.safetensors").is_file()
    assert any("Graphcore/bert-base-ipu" in s for s in run.substitutions)


def test_text_layouts_collators_and_refusals() -> None:
    from transformers import (
        BertConfig,
        BertForMaskedLM,
        GPT2Config,
        GPT2LMHeadModel,
        T5Config,
        T5ForConditionalGeneration,
    )

    from accelkit.facades.poptorch import optimum

    gpt2 = GPT2LMHeadModel(GPT2Config(n_embd=16, n_layer=4, n_head=2, vocab_size=64, n_positions=32))
    cfg = optimum.IPUConfig(layers_per_ipu=[0, 2, 2], embedding_serialization_factor=4,
                            recompute_checkpoint_every_layer=True)
    placement = optimum._parallelize(gpt2, cfg)
    assert placement[:2] == ["Token Embedding     --> IPU 0", "Position Embedding  --> IPU 0"]
    assert "Layer 3  --> IPU 2" in placement and "Head                --> IPU 0" in placement  # tied head
    assert "SerializedLinear in 4 slices" in placement[-1] and len(gpt2._accelkit_hooks) == 4
    bert = BertForMaskedLM(BertConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                      intermediate_size=32, vocab_size=64))
    assert "Classifier --> IPU 0" in optimum._parallelize(bert, optimum.IPUConfig(layers_per_ipu=[1, 1]))
    t5 = T5ForConditionalGeneration(T5Config(d_model=16, d_ff=32, num_layers=1, num_heads=2, vocab_size=64, d_kv=8))
    with pytest.raises(optimum.OptimumGraphcoreError, match="T5ForConditionalGeneration"):
        optimum._parallelize(t5, optimum.IPUConfig())
    padded = optimum.pad_on_batch_axis(5)(lambda rows: {"x": torch.tensor(rows)})([1, 2])
    assert padded["x"].tolist() == [1, 2, 1, 2, 1]
    optimum.check_min_version("0.6.0.dev0")
    with pytest.raises(ImportError):
        optimum.check_min_version("9.0")


QA_PREDICT = '''
import torch
import transformers
from optimum.graphcore import IPUConfig, IPUTrainer, IPUTrainingArguments

cfg = transformers.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                              vocab_size=100, max_position_embeddings=64)
model = transformers.BertForQuestionAnswering(cfg)
ipu_config = IPUConfig(ipus_per_replica=2, layers_per_ipu=[1, 1], inference_device_iterations=2)
args = IPUTrainingArguments(output_dir="out", per_device_eval_batch_size=2, pad_on_batch_axis=True, do_eval=True)
features = [{"input_ids": torch.randint(0, 100, (16,)), "attention_mask": torch.ones(16, dtype=torch.long)}
            for _ in range(7)]  # SQuAD's evaluation features: no start or end positions
trainer = IPUTrainer(model=model, ipu_config=ipu_config, args=args)
out = trainer.predict(features)
start, end = out.predictions
print("predictions", len(start), tuple(start.shape[1:]), len(end))
'''


def test_a_question_answering_prediction_without_labels_gives_start_and_end_logits(tmp_path: Path) -> None:
    """run_qa.py's evaluation: features without answer positions, so the model returns no loss; the trainer gives
    back the start and end logits of every feature (the last batch padded, then trimmed: --pad_on_batch_axis)."""
    script = tmp_path / "qa_predict.py"
    script.write_text(QA_PREDICT)
    run = run_script(script, synthetic_data=True, quiet=True, cwd=tmp_path)
    assert run.exit_code == 0, run.error
    assert "predictions 7 (16,) 7" in (run.output or "")
