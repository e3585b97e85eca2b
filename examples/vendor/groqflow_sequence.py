"""A GroqFlow program in the shape of GroqFlow's power-user example examples/sequence.py
(github.com/groq/groqflow): the default build stages written out as a Sequence, with the fp16 conversion
left out, so the model is built in fp32. Written for the real SDK.
"""
import groqflow.justgroqit.compile as compile
import groqflow.justgroqit.export as gf_export
import onnxflow.justbuildit.export as of_export
import onnxflow.justbuildit.stage as stage
import torch
from groqflow import groqit

torch.manual_seed(0)


class SmallModel(torch.nn.Module):
    def __init__(self, input_size, output_size):
        super().__init__()
        self.fc = torch.nn.Linear(input_size, output_size)

    def forward(self, x):
        output = self.fc(x)
        return output


input_size = 10
output_size = 5

pytorch_model = SmallModel(input_size, output_size)
inputs = {"x": torch.rand(input_size, dtype=torch.float32)}

onnx_sequence = stage.Sequence(
    "onnx_sequence",
    "Building ONNX Model without fp16 conversion",
    [
        of_export.ExportPytorchModel(),
        of_export.OptimizeOnnxModel(),
        gf_export.CheckOnnxCompatibility(),
        # of_export.ConvertOnnxToFp16(),  # the step this example skips
        compile.CompileOnnx(),
        compile.Assemble(),
    ],
    enable_model_validation=True,
)

groq_model = groqit(pytorch_model, inputs, sequence=onnx_sequence)

pytorch_outputs = pytorch_model(**inputs)
groq_outputs = groq_model(**inputs)
print(f"Pytorch_outputs: {pytorch_outputs}")
print(f"Groq_outputs: {groq_outputs}")
assert torch.allclose(groq_outputs, pytorch_outputs, atol=1e-6), "an fp32 build answers as PyTorch does"
print(f"estimated latency {groq_model.estimate_performance().latency * 1e6:.3f} us")
