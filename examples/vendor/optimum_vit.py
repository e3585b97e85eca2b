"""Fine-tune a ViT on a local folder of multi-label X-ray images with Hugging Face's IPU trainer (optimum.graphcore),
in the shape of Graphcore's ViT walkthrough (tutorials/pytorch/vit_model_training), written for accelkit.

    python -m accelkit.vendor.chest_xray data/chest-xray-nihcc
    accelkit vendor-run --synthetic-data examples/vendor/optimum_vit.py --dataset-dir data/chest-xray-nihcc

It reads NIH's CSV with pandas, writes the imagefolder metadata, loads it with datasets, transforms the images with
torchvision, and trains and evaluates with IPUConfig / IPUTrainingArguments / IPUTrainer, then reads its own logged
losses back from stdout as the walkthrough does.
"""

import argparse
import contextlib
import io
import json
import os
from pathlib import Path

import datasets
import optimum.graphcore as optimum_graphcore
import pandas as pd
import torch
import transformers
from scipy.special import softmax
from torchvision import transforms

parser = argparse.ArgumentParser()
parser.add_argument("--dataset-dir", default=Path(os.environ.get("DATASETS_DIR", ".")) / "chest-xray-nihcc")
parser.add_argument("--output-dir", default="vit-output")
parser.add_argument("--max-steps", type=int, default=6)
parser.add_argument("--gradient-accumulation", type=int, default=2)
args = parser.parse_args()

root = Path(args.dataset_dir)
table = pd.read_csv(root / "Data_Entry_2017_v2020.csv")
names = sorted({name for row in table["Finding Labels"] for name in row.split("|")})
index = {name: i for i, name in enumerate(names)}
table["labels"] = [[float(n in row.split("|")) for n in names] for row in table["Finding Labels"]]
table[["Image Index", "labels"]].rename(columns={"Image Index": "file_name"}).to_json(
    root / "images" / "metadata.jsonl", orient="records", lines=True)

data = datasets.load_dataset("imagefolder", data_dir=root / "images")
parts = data["train"].train_test_split(0.25, seed=0)
extractor = transformers.AutoFeatureExtractor.from_pretrained("google/vit-base-patch16-224-in21k")
to_pixels = transforms.Compose([
    transforms.Lambda(lambda image: image.convert("RGB")),
    transforms.Resize(extractor.size),
    transforms.ToTensor(),
    transforms.Normalize(mean=extractor.image_mean, std=extractor.image_std),
    transforms.ConvertImageDtype(dtype=torch.float16),
])


def add_pixels(batch):
    batch["pixel_values"] = [to_pixels(image) for image in batch["image"]]
    return batch


for part in parts.values():
    part.set_transform(add_pixels)


def collate(rows):
    return {"pixel_values": torch.stack([r["pixel_values"] for r in rows]),
            "labels": torch.tensor([r["labels"] for r in rows])}


model = transformers.AutoModelForImageClassification.from_pretrained(
    "google/vit-base-patch16-224-in21k", num_labels=len(names))
ipu_config = optimum_graphcore.IPUConfig.from_pretrained("Graphcore/vit-base-ipu")
training_args = optimum_graphcore.IPUTrainingArguments(
    output_dir=args.output_dir, overwrite_output_dir=True, per_device_train_batch_size=1,
    per_device_eval_batch_size=1, gradient_accumulation_steps=args.gradient_accumulation, max_steps=args.max_steps,
    logging_steps=2, save_steps=3, save_total_limit=1, warmup_ratio=0.25, lr_scheduler_type="cosine",
    learning_rate=2e-4, remove_unused_columns=False, dataloader_drop_last=True, seed=1337)
auc = datasets.load_metric("roc_auc", "multilabel")


def compute_metrics(prediction):
    scores = softmax(prediction.predictions.astype("float32"), axis=1)
    return {"roc_auc": auc.compute(prediction_scores=scores, references=prediction.label_ids,
                                   average="micro")["roc_auc"]}


trainer = optimum_graphcore.IPUTrainer(model=model, ipu_config=ipu_config, args=training_args,
                                       train_dataset=parts["train"], eval_dataset=parts["test"],
                                       compute_metrics=compute_metrics, tokenizer=extractor, data_collator=collate)
captured = io.StringIO()
with contextlib.redirect_stdout(captured):
    trainer.train()
records = [json.loads(line.replace("'", '"')) for line in captured.getvalue().splitlines() if line.startswith("{'l")]
print(f"logged {len(records)} losses: " + ", ".join(f"{r['loss']:.4f} at epoch {r['epoch']}" for r in records))
metrics = trainer.evaluate()
trainer.log_metrics("eval", metrics)
trainer.save_metrics("eval", metrics)
print("labels:", len(index), "checkpoints:", sorted(p.name for p in Path(args.output_dir).glob("checkpoint-*")))
