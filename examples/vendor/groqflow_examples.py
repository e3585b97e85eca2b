"""GroqFlow programs in the shape of GroqFlow's examples (github.com/groq/groqflow, examples/: hello_world.py,
build_name.py, cache_dir.py, rebuild_always.py, num_chips.py, groqview.py, compiler_flags.py, benchmark.py):
a small model built with groqit(model, inputs) and the build arguments those examples show, called like the
PyTorch model, then benchmarked and estimated. GroqFlow is for inference, so nothing trains: the check is
that each build answers as the PyTorch model does. Written for the real SDK.
"""
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
inputs = {"x": torch.rand(input_size)}

groq_model = groqit(pytorch_model, inputs, build_name="hello_world", cache_dir="groqflow_cache", rebuild="always",
                    num_chips=1, groqview=True, compiler_flags=["--effort=standard"])
groq_output = groq_model(**inputs)
pytorch_output = pytorch_model(**inputs)
print("Groq output:", groq_output)
print("PyTorch output:", pytorch_output)
assert torch.allclose(groq_output.float(), pytorch_output, atol=1e-2), "the build does not match PyTorch"

performance = groq_model.benchmark(repetitions=100)
print(f"benchmark latency {performance.latency * 1e6:.3f} us, throughput {performance.throughput:,.0f} inferences/s")
estimate = groq_model.estimate_performance()
print(f"estimated latency {estimate.latency * 1e6:.3f} us")

again = groqit(pytorch_model, inputs, build_name="hello_world", cache_dir="groqflow_cache", num_chips=1,
               groqview=True, compiler_flags=["--effort=standard"])  # the same arguments: from the build cache
assert torch.equal(again(**inputs), groq_output)
print(f"build status {again.state.build_status}, loaded from the cache: {again.state.loaded_from_cache}")
