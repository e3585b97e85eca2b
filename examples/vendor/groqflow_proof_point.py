"""A GroqFlow program in the shape of Groq's examples and proof points (github.com/groq/groqflow:
examples/pytorch/benchmark_abunch.py, groqview.py, compiler_flags.py, and the NLP proof points that build a
transformer with keyword inputs): a decoder whose forward takes (input_ids, past_key_values=None,
attention_mask=None), built with keyword inputs, called by keyword, benchmarked over a bunch of inputs,
its tool commands printed and its GroqView opened. Written for the real SDK.
"""
import torch
from groqflow import groqit
from groqflow.common.build import DEFAULT_CACHE_DIR

torch.manual_seed(0)


class TinyDecoder(torch.nn.Module):
    def __init__(self, vocab=50, width=16):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.head = torch.nn.Linear(width, vocab)

    def forward(self, input_ids, past_key_values=None, attention_mask=None):
        h = self.embed(input_ids)
        if attention_mask is not None:
            h = h * attention_mask.unsqueeze(-1).to(h.dtype)
        return self.head(h).mean(dim=1)


model = TinyDecoder().eval()
inputs = {"input_ids": torch.randint(0, 50, (1, 8)), "attention_mask": torch.tensor([[1, 1, 1, 1, 1, 0, 0, 0]])}
gmodel = groqit(model, inputs, build_name="tiny_decoder", compiler_flags=["--effort=high"])

out = gmodel(**inputs)
with torch.no_grad():
    ref = model(**inputs)
print(f"keyword inputs bound by name: max difference {float((out.float() - ref).abs().max()):.4f}")

abunch_o_inputs = [{"input_ids": torch.randint(0, 50, (1, 8)), "attention_mask": torch.ones(1, 8, dtype=torch.long)}
                   for _ in range(3)]
performance = gmodel.benchmark_abunch(input_collection=abunch_o_inputs)
print("Your build's estimated performance is:")
print(f"{performance.latency:.7f} {performance.latency_units}")
print(f"{performance.throughput:.1f} {performance.throughput_units}")
print(f"Groq Compiler command: {gmodel.state.info.compiler_command}")
gmodel.groqview()
print(f"cache: {DEFAULT_CACHE_DIR}")
