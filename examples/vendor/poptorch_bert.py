"""A PopTorch program in the shape of Graphcore's BERT fine-tuning tutorials (github.com/graphcore/tutorials,
tutorials/pytorch/finetuning_bert; Graphcore's BERT examples): a Hugging Face BERT from from_pretrained, the
encoder layers split over two IPUs with poptorch.BeginBlock, gradient accumulation, an available-memory
proportion, and the model called with keyword arguments (input_ids=, attention_mask=, token_type_ids=,
labels=, return_dict=False). Written for the real SDK. Under `accelkit vendor-run --synthetic-data` the
checkpoint is the same architecture at a small size with random weights; the task here is to tell
sequences by the id of their first token (below 10 or not).
"""
import poptorch
import torch
from transformers import BertForSequenceClassification

torch.manual_seed(0)
model = BertForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
model.train()

layers = model.bert.encoder.layer
model.bert.embeddings = poptorch.BeginBlock(model.bert.embeddings, "Embedding", ipu_id=0)
for index, layer in enumerate(layers):
    ipu = 0 if index < len(layers) // 2 else 1
    layers[index] = poptorch.BeginBlock(layer, f"Encoder{index}", ipu_id=ipu)
model.classifier = poptorch.BeginBlock(model.classifier, "Classifier", ipu_id=1)

opts = poptorch.Options()
opts.deviceIterations(1)
opts.Training.gradientAccumulation(4)
opts.setAvailableMemoryProportion({"IPU0": 0.2, "IPU1": 0.2})
opts.outputMode(poptorch.OutputMode.Final)

optimizer = poptorch.optim.AdamW(model.parameters(), lr=2e-3, loss_scaling=1.0)
training_model = poptorch.trainingModel(model, options=opts, optimizer=optimizer)

seq_len, micro_batch = 16, 4
generator = torch.Generator().manual_seed(1)
losses = []
for _step in range(40):
    batch = micro_batch * 4  # micro-batch x gradient accumulation
    input_ids = torch.randint(1, 20, (batch, seq_len), generator=generator)  # a 20-word vocabulary
    labels = (input_ids[:, 0] < 10).long()
    attention_mask = torch.ones(batch, seq_len, dtype=torch.long)
    token_type_ids = torch.zeros(batch, seq_len, dtype=torch.long)
    loss, logits = training_model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                                  labels=labels, return_dict=False)
    losses.append(float(loss))
training_model.detachFromDevice()
print(f"first loss {sum(losses[:5]) / 5:.4f} last loss {sum(losses[-5:]) / 5:.4f}")
