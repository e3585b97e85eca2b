"""A GroqFlow proof point in the shape of Groq's NLP ones (github.com/groq/groqflow:
proof_points/natural_language_processing/bert/bert_tiny.py with demo_helpers/compute_performance.py): a
Hugging Face classifier loaded with ``torchscript=True`` (so it returns tuples; its build returns the one output
tensor, as GroqFlow unpacks a graph's outputs), built by ``groqit`` with keyword inputs, the inputs named from
``state.expected_input_shapes``, run over SST's test sentences with ``run_abunch``, and compared with the same model on the CPU; the on-chip latency is
``estimate_performance().compute_latency``. Its helpers (``sst_helpers``) come from a package on the path, as
``demo_helpers`` does. Written for the real SDK.
"""
import torch
import transformers
from groqflow import groqit
from sst_helpers import keep_boxes, sst_inputs

torch.manual_seed(0)
name = "M-FAC/bert-tiny-finetuned-sst2"
tokenizer = transformers.AutoTokenizer.from_pretrained(name)
model = transformers.AutoModelForSequenceClassification.from_pretrained(name, torchscript=True).eval()
dummy = {"input_ids": torch.ones(1, 32, dtype=torch.long), "attention_mask": torch.ones(1, 32, dtype=torch.bool)}
gmodel = groqit(model, dummy, build_name="sst_classifier")
print(f"input names: {list(gmodel.state.expected_input_shapes)}")

x, y = sst_inputs(tokenizer, max_seq_length=32, count=8)
groq_out = gmodel.run_abunch(x)
# the graph has one output: GroqFlow hands back the logits tensor itself (a tuple only for several outputs)
assert isinstance(groq_out[0], torch.Tensor)
groq_pred = torch.vstack(groq_out).argmax(-1)
with torch.no_grad():
    cpu_pred = torch.vstack([model(**inputs)[0] for inputs in x]).argmax(-1)
print(f"same predictions on the chip and the CPU: {bool((groq_pred == cpu_pred).all())}")
print(f"accuracy {float((groq_pred.numpy() == y).mean()):.2f} over {len(y)} sentences")
print(f"on-chip latency {gmodel.estimate_performance().compute_latency * 1000:.4f} ms")
boxes = torch.tensor([[5.0, 5.0, 4.0, 4.0], [5.2, 5.0, 4.0, 4.0], [20.0, 20.0, 2.0, 2.0]])
print(f"boxes kept: {keep_boxes(boxes, torch.tensor([0.9, 0.8, 0.7])).tolist()}")
