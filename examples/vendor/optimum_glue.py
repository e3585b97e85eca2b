"""Fine-tune BERT on GLUE SST-2 with optimum-graphcore's IPUTrainer, in the shape of optimum-graphcore's
examples/text-classification/run_glue.py (shortened; written for accelkit): HfArgumentParser over its own arguments
and IPUTrainingArguments, load_dataset("glue", task), the label names from the dataset's features, the IPU config
from the Hub (Graphcore/bert-base-ipu), evaluate.load("glue", task), train / evaluate / metrics / model card.

    accelkit vendor-run --synthetic-data examples/vendor/optimum_glue.py --model_name_or_path bert-base-cased \
        --ipu_config_name Graphcore/bert-base-ipu --task_name sst2 --do_train --do_eval --max_seq_length 128 \
        --per_device_train_batch_size 8 --gradient_accumulation_steps 4 --max_steps 4 --output_dir ./output/sst2
"""

import sys
from dataclasses import dataclass, field

import evaluate
import numpy as np
from optimum.graphcore import IPUConfig, IPUTrainer
from optimum.graphcore import IPUTrainingArguments as TrainingArguments
from optimum.graphcore.utils import check_min_version
from transformers import (
    AutoConfig,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    HfArgumentParser,
    default_data_collator,
)

from datasets import load_dataset

check_min_version("0.6.0.dev0")


@dataclass
class Arguments:
    model_name_or_path: str = field(metadata={"help": "checkpoint to fine-tune"})
    task_name: str = field(default="sst2")
    max_seq_length: int = field(default=128)
    max_train_samples: int | None = field(default=None)
    max_eval_samples: int | None = field(default=None)


def main() -> None:
    args, training_args = HfArgumentParser((Arguments, TrainingArguments)).parse_args_into_dataclasses()
    raw = load_dataset("glue", args.task_name)
    label_list = raw["train"].features["label"].names
    config = AutoConfig.from_pretrained(args.model_name_or_path, num_labels=len(label_list),
                                        finetuning_task=args.task_name)
    ipu_config = IPUConfig.from_pretrained(training_args.ipu_config_name)
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    model = AutoModelForSequenceClassification.from_pretrained(args.model_name_or_path, config=config)

    def preprocess(examples):
        return tokenizer(examples["sentence"], padding="max_length", max_length=args.max_seq_length,
                         truncation=True)

    with training_args.main_process_first(desc="dataset map pre-processing"):
        raw = raw.map(preprocess, batched=True)
    train, evaluation = raw["train"], raw["validation"]
    if args.max_train_samples is not None:
        train = train.select(range(args.max_train_samples))
    if args.max_eval_samples is not None:
        evaluation = evaluation.select(range(args.max_eval_samples))
    metric = evaluate.load("glue", args.task_name)

    def compute_metrics(p):
        preds = p.predictions[0] if isinstance(p.predictions, tuple) else p.predictions
        return metric.compute(predictions=np.argmax(preds, axis=1), references=p.label_ids)

    trainer = IPUTrainer(model=model, ipu_config=ipu_config, args=training_args,
                         train_dataset=train if training_args.do_train else None,
                         eval_dataset=evaluation if training_args.do_eval else None,
                         compute_metrics=compute_metrics, tokenizer=tokenizer, data_collator=default_data_collator)
    if training_args.do_train:
        result = trainer.train()
        metrics = result.metrics
        metrics["train_samples"] = len(train)
        trainer.save_model()
        trainer.log_metrics("train", metrics)
        trainer.save_metrics("train", metrics)
        trainer.save_state()
    if training_args.do_eval:
        metrics = trainer.evaluate(eval_dataset=evaluation)
        metrics["eval_samples"] = len(evaluation)
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)
    trainer.create_model_card(finetuned_from=args.model_name_or_path, tasks="text-classification",
                              dataset=f"GLUE {args.task_name.upper()}")
    print("placement:", " | ".join(trainer.placement))


if __name__ == "__main__":
    sys.exit(main())
