"""Text classification on the IPU in the shape of the Hugging Face tutorials Graphcore's PopTorch material follows
(SST-2 from the Hub, tokenized with Dataset.map, torch format, a poptorch.DataLoader, then a metric): the data and
the tokenizer are downloads, the model is a small bag of embeddings. Written for the real SDK.

    accelkit vendor-run --synthetic-data poptorch_sst2.py --epochs 2
"""
import argparse

import evaluate
import poptorch
import torch
from datasets import load_dataset
from transformers import AutoTokenizer

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("--device-iterations", type=int, default=4)
args = parser.parse_args()

raw = load_dataset("glue", "sst2")
tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")


def tokenize(batch):
    return tokenizer(batch["sentence"], padding="max_length", truncation=True, max_length=48)


encoded = raw.map(tokenize, batched=True, remove_columns=["sentence", "idx"])
encoded.set_format("torch", columns=["input_ids", "attention_mask", "label"])
print(f"train rows {len(encoded['train'])}, columns {encoded['train'].column_names}")


class BagOfEmbeddings(torch.nn.Module):
    def __init__(self, vocab_size, width=32):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab_size, width)
        self.head = torch.nn.Linear(width, 2)

    def forward(self, input_ids, attention_mask, labels=None):  # (B, T) -> (B, 2)
        mask = attention_mask.unsqueeze(-1).float()
        logits = self.head((self.embed(input_ids) * mask).sum(1) / mask.sum(1))
        if labels is None:
            return logits
        return logits, torch.nn.functional.cross_entropy(logits, labels)


def batches(ds, opts, batch_size, shuffle):
    return poptorch.DataLoader(opts, [(r["input_ids"], r["attention_mask"], r["label"]) for r in ds],
                               batch_size=batch_size, shuffle=shuffle)


torch.manual_seed(0)
model = BagOfEmbeddings(tokenizer.vocab_size)
opts = poptorch.Options().deviceIterations(args.device_iterations)
training = poptorch.trainingModel(model, opts, optimizer=poptorch.optim.AdamW(model.parameters(), lr=0.02))
losses = []
for epoch in range(args.epochs):
    for ids, mask, labels in batches(encoded["train"], opts, args.batch_size, shuffle=True):
        _, loss = training(ids, mask, labels=labels)
        losses.append(float(loss.mean()))
training.detachFromDevice()
print(f"first loss {losses[0]:.4f} last loss {losses[-1]:.4f}")

metric = evaluate.load("accuracy")
inference = poptorch.inferenceModel(model, poptorch.Options().deviceIterations(args.device_iterations))
for ids, mask, labels in batches(encoded["validation"], opts, args.batch_size, shuffle=False):
    metric.add_batch(predictions=inference(ids, mask).argmax(-1), references=labels)
print(f"validation accuracy {metric.compute()['accuracy']:.3f}")
