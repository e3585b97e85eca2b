"""Graphcore's applications (graphcore/examples ``nlp/``, ``vision/``: what ALCF's Graphcore page runs, e.g.
``train_gpt2.py`` on 16 IPUs) on the simulated IPU: the helpers they import beside PopTorch (``examples_utils``'s
``load_lib`` for their custom operators, ``horovod.torch`` between poprun's processes, ``poptorch.enums``), the
custom operators whose computation their C++ shows, ``serializedMatMul``, ``poptorch.Attribute``, and inputs sliced
on the host (``batch[:, :-1]``) that the model ``view``s, as it may on the IPU.

The script here is written for the tests, in the shape of the applications (nothing in it names accelkit)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from accelkit.facades import poptorch
from accelkit.facades.poptorch import examples_utils, horovod

APP = '''
import argparse
import os
import time

import popdist
import poptorch
import torch
import torch.nn as nn
import horovod.torch as hvd
from examples_utils import load_lib
from poptorch.enums import DataLoaderMode

parser = argparse.ArgumentParser()
parser.add_argument("--custom-ops", type=lambda s: s == "True", default=True)
parser.add_argument("--gradient-accumulation", type=int, default=4)
parser.add_argument("--device-iterations", type=int, default=2)
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()
if popdist.isPopdistEnvSet():
    hvd.init()
    hvd.broadcast(torch.Tensor([42]), root_rank=0)
if args.custom_ops:
    print("Building (if necessary) and loading remap_ce.")
    load_lib(os.path.join(os.path.dirname(os.path.abspath(__file__)), "custom_ops", "remap_ce.cpp"))

VOCAB, HIDDEN, SEQ = 64, 32, 16


class SerializedLinear(nn.Linear):
    def __init__(self, n_in, n_out, factor, mode=poptorch.MatMulSerializationMode.OutputChannels):
        super().__init__(n_in, n_out, bias=False)
        self.mode, self.factor = mode, factor

    def forward(self, x):
        return poptorch.serializedMatMul(x, self.weight.t(), self.mode, self.factor)


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = poptorch.BeginBlock(nn.Embedding(VOCAB, HIDDEN), "wte", ipu_id=0)
        self.layer = poptorch.BeginBlock(nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.GELU()), "layer0", ipu_id=1)
        self.head = SerializedLinear(HIDDEN, VOCAB, 4)

    def forward(self, input_ids, labels):
        with poptorch.Attribute(__outline={"layer": "Dense"}):
            h = self.layer(self.wte(input_ids))
        logits = self.head(h).view(-1, VOCAB)
        logits = poptorch.custom_op([logits], "RemapCE", "ai.graphcore", 1, example_outputs=[logits],
                                    attributes={"grain_size": 8})[0]
        loss = nn.functional.cross_entropy(logits, labels.view(-1))
        return poptorch.identity_loss(loss, reduction="none"), loss


torch.manual_seed(0)
model = TinyLM()
opts = poptorch.Options()
opts.deviceIterations(args.device_iterations)
opts.Training.gradientAccumulation(args.gradient_accumulation)
opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
opts.outputMode(poptorch.OutputMode.Sum)
samples = args.device_iterations * args.gradient_accumulation
text = torch.arange(SEQ + 1).repeat(8 * samples, 1) % VOCAB  # a repeating sequence: the next token is learnable
loader = poptorch.DataLoader(opts, torch.utils.data.TensorDataset(text), batch_size=1, shuffle=False,
                             mode=DataLoaderMode.Sync)
optimizer = poptorch.optim.AdamW(model.parameters(), lr=0.01)
trainer = poptorch.trainingModel(model, opts, optimizer=optimizer)
losses = []
for epoch in range(args.epochs):
    for (batch,) in loader:
        input_ids, labels = batch[:, :-1], batch[:, 1:]  # slices: not contiguous on the host
        start = time.perf_counter()
        loss, _ = trainer(input_ids=input_ids, labels=labels)
        losses.append(float(loss) / samples)
        print(f"step {len(losses) - 1} loss: {losses[-1]:.4f} ({time.perf_counter() - start:.2f} s)")
print(f"first loss {losses[0]:.4f} last loss {losses[-1]:.4f}")
'''


def _app(tmp_path: Path) -> Path:
    (tmp_path / "custom_ops").mkdir(exist_ok=True)
    (tmp_path / "custom_ops" / "remap_ce.cpp").write_text("// cppimport\n#include <popart/op.hpp>\n")
    script = tmp_path / "train_tiny.py"
    script.write_text(APP)
    return script


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str):
    from accelkit.vendor import run_script

    script = _app(tmp_path)
    monkeypatch.chdir(tmp_path)
    return run_script(script, list(args), synthetic_data=True, quiet=True)


def test_an_application_with_its_helpers_custom_op_and_sliced_inputs_trains_pipelined(tmp_path, monkeypatch):
    run = _run(tmp_path, monkeypatch, "--gradient-accumulation", "4", "--device-iterations", "2")
    out = (run.output or "") + (run.error or "")
    assert run.exit_code == 0, out
    first, last = (float(x) for x in out.split("first loss ")[1].split(" last loss "))
    assert last < 0.7 * first, out  # the next token of a repeating sequence is learnt
    assert "Building (if necessary) and loading remap_ce." in out
    assert {"horovod.torch", "examples_utils", "poptorch.enums"} <= set(run.served)
    said = " ".join(run.accepted)
    assert "load_lib('remap_ce.cpp')" in said and "nothing is compiled here" in said
    assert "custom_op('RemapCE', 'ai.graphcore')" in said and "remap_tensor_ce.cpp" in said
    assert "serializedMatMul(mode=OutputChannels)" in said and "poptorch.Attribute" in said
    assert "horovod" not in sys.modules and "examples_utils" not in sys.modules  # gone with the run
    assert "the script's own timings (time.perf_counter()) and the rates it prints from them measure this CPU" \
        in run.summary()


def test_custom_ops_off_loads_nothing_and_a_missing_source_is_the_real_error(tmp_path, monkeypatch):
    run = _run(tmp_path, monkeypatch, "--custom-ops", "False", "--gradient-accumulation", "1",
               "--device-iterations", "1")
    assert run.exit_code == 0, (run.output or "") + (run.error or "")
    assert not any("load_lib" in said for said in run.accepted)
    (tmp_path / "custom_ops" / "remap_ce.cpp").unlink()
    with pytest.raises(FileNotFoundError, match="File does not exist"):
        examples_utils.load_lib(tmp_path / "custom_ops" / "remap_ce.cpp")


def test_known_custom_op_is_a_copy_with_the_gradient_passed_through_and_others_are_refused():
    x = torch.randn(4, 6, requires_grad=True)
    (y,) = poptorch.custom_op([x], "RemapCE", "ai.graphcore", 1, example_outputs=[x], attributes={"grain_size": 8})
    assert torch.equal(y, x) and y.data_ptr() != x.data_ptr()  # a new tensor with the same values
    (y * torch.arange(6.0)).sum().backward()
    assert torch.equal(x.grad, torch.arange(6.0).expand(4, 6))
    with pytest.raises(poptorch.PopTorchError, match="'RemapCE', domain='custom.ops'.*cannot run"):
        poptorch.custom_op([x], "RemapCE", "custom.ops", 1, example_outputs=[x])  # the domain is part of the name
    lib = examples_utils.load_lib(Path(__file__))
    with pytest.raises(poptorch.PopTorchError, match="was not compiled here.*'RemapCEOp'"):
        lib.RemapCEOp  # noqa: B018 - a ctypes library's symbol


def test_serialized_matmul_is_the_product_and_checks_its_arguments():
    a, b = torch.randn(3, 8), torch.randn(8, 12)
    for mode in poptorch.MatMulSerializationMode:
        assert torch.allclose(poptorch.serializedMatMul(a, b, mode, 4), a @ b)
    with pytest.raises(poptorch.PopTorchError, match="mode must be a poptorch.MatMulSerializationMode"):
        poptorch.serializedMatMul(a, b, "output_channels", 4)
    with pytest.raises(poptorch.PopTorchError, match="factor must be an int"):
        poptorch.serializedMatMul(a, b, poptorch.MatMulSerializationMode.ReducingDim, 4.0)
    with pytest.raises(poptorch.PopTorchError, match="takes a dict"):
        poptorch.Attribute(__outline="Dense")
    with poptorch.Attribute(__outline={"layer": "Dense"}):
        with poptorch.Attribute(__outline={"kind": "mlp"}):
            assert poptorch.Attribute._current["__outline"] == {"layer": "Dense", "kind": "mlp"}
        assert poptorch.Attribute._current["__outline"] == {"layer": "Dense"}
    assert poptorch.Attribute._current == {}


def test_horovod_is_one_process_whose_collectives_return_their_input():
    t = torch.arange(4.0)
    horovod.init()
    assert (horovod.rank(), horovod.size(), horovod.local_rank(), horovod.local_size()) == (0, 1, 0, 1)
    for out in (horovod.allreduce(t, op=horovod.Sum), horovod.allreduce(t, op=horovod.Average),
                horovod.allgather(t), horovod.broadcast(t, root_rank=0), *horovod.grouped_allreduce([t])):
        assert torch.equal(out, t) and out.data_ptr() != t.data_ptr()
    with pytest.raises(ValueError, match="one process, rank 0 of 1"):
        horovod.broadcast(t, root_rank=1)
    with pytest.raises(ValueError, match="unknown Horovod reduction"):
        horovod.allreduce(t, op="Median")


def test_the_helpers_are_served_only_beside_the_simulated_sdk(tmp_path, monkeypatch):
    from accelkit.vendor import run_script

    script = tmp_path / "plain.py"
    script.write_text("import importlib.util\n"
                      "print('horovod', importlib.util.find_spec('horovod') is not None)\n"
                      "print('examples_utils', importlib.util.find_spec('examples_utils') is not None)\n")
    monkeypatch.chdir(tmp_path)
    run = run_script(script, [], synthetic_data=True, quiet=True)
    assert run.exit_code == 0, run.error
    assert "horovod False" in run.output and "examples_utils False" in run.output


CNN_HELPER = '''
import sys
from pathlib import Path

root_folder = str(Path(__file__).parent.parent.absolute())
sys.path.insert(0, root_folder)
'''

CNN_DATASETS_INIT = "from .dataset import get_data\n"

CNN_DATASET = '''
import torch
import torchvision
from torchvision import transforms


class Generated(torch.utils.data.Dataset):
    def __init__(self, size):
        torch.manual_seed(0)
        self.data = torch.randint(0, 255, (3, 40, 40)).float()
        self.size = size
        self.crop = transforms.RandomResizedCrop(32)

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return self.crop(self.data) / 255.0, index % 4


def get_data(size):
    return Generated(size)
'''

CNN_TRAIN = '''
import argparse

import poptorch
import popart
import popdist
import torch
import horovod.torch as hvd
import import_helper
import datasets
import models

parser = argparse.ArgumentParser()
parser.add_argument("--recompute-mode", default="manual", choices=["none", "manual"])
args = parser.parse_args()
opts = poptorch.Options()
opts.Training.gradientAccumulation(2)
if args.recompute_mode == "manual":
    opts._Popart.set("autoRecomputation", int(popart.RecomputationType.RecomputeAll))
model = models.get_model()
data = poptorch.DataLoader(opts, datasets.get_data(64), batch_size=4, shuffle=False)
trainer = poptorch.trainingModel(model, opts, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.05))
for step, (x, y) in enumerate(data):
    _, loss = trainer(x, y)
    if step == 3:
        break
print(f"trained {step + 1} steps, loss {float(loss):.3f}")
'''

CNN_MODELS = '''
import torch
import torchvision


class TrainingModelWithLoss(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y):
        out = self.model(x)
        return out, torch.nn.functional.cross_entropy(out, y)


def name_scope_hook(module):
    for name, m in module.named_modules():
        m.register_forward_pre_hook(lambda _m, _i, name=name: torch.ops.poptorch.push_name_scope(name.split(".")[-1]))
        m.register_forward_hook(lambda _m, _i, _o: torch.ops.poptorch.pop_name_scope())


def get_model():
    net = torchvision.models.resnet18(num_classes=4)
    name_scope_hook(net)
    return TrainingModelWithLoss(net)
'''


def _cnn_app(tmp_path: Path) -> Path:
    (tmp_path / "train").mkdir()
    (tmp_path / "datasets").mkdir()
    (tmp_path / "models").mkdir()
    (tmp_path / "train" / "import_helper.py").write_text(CNN_HELPER)
    (tmp_path / "train" / "train.py").write_text(CNN_TRAIN)
    (tmp_path / "datasets" / "__init__.py").write_text(CNN_DATASETS_INIT)
    (tmp_path / "datasets" / "dataset.py").write_text(CNN_DATASET)
    (tmp_path / "models" / "__init__.py").write_text("from .models import get_model\n")
    (tmp_path / "models" / "models.py").write_text(CNN_MODELS)
    return tmp_path / "train" / "train.py"


def test_an_application_laid_out_like_graphcores_cnns_finds_its_own_packages_and_recomputes(tmp_path, monkeypatch):
    """The script's helper puts the application's root on the path; its own ``datasets`` package is not replaced by
    the Hugging Face stand-in, and the torchvision it imports only from there is stood in for; PopTorch's name
    scopes compute nothing; ``autoRecomputation`` sets the modelled recomputation."""
    import types

    from accelkit.vendor import run_script

    script = _cnn_app(tmp_path)
    monkeypatch.chdir(tmp_path / "train")
    other = types.ModuleType("datasets")  # another package of that name, imported in this process before the run
    monkeypatch.setitem(sys.modules, "datasets", other)
    runs = {}
    for mode in ("manual", "none"):
        run = run_script(script, ["--recompute-mode", mode], synthetic_data=True, quiet=True)
        assert run.exit_code == 0, (run.output or "") + (run.error or "")
        assert "trained 4 steps" in run.output
        runs[mode] = run
    said = " ".join(runs["manual"].accepted)
    assert "autoRecomputation" in said and "recompute='full'" in said
    (label, report), = runs["manual"].reports
    assert "TrainingModelWithLoss" in label
    assert sys.modules["datasets"] is other  # set aside for the run, back after it
    for name in ("datasets", "models", "import_helper"):  # the app's own modules left with it (what was here before
        assert not str(getattr(sys.modules.get(name), "__file__", "") or "").startswith(str(tmp_path))  # is back)


def test_recompute_all_keeps_less_than_no_recomputation_and_runs_the_forward_again():
    import accelkit as ak
    from accelkit.facades.poptorch.executor import _recompute

    assert [_recompute(k, 1) for k in range(5)] == ["none", "selective", "selective", "none", "full"]
    assert _recompute(3, 4) == "full"
    block = lambda: torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.LayerNorm(64), torch.nn.GELU())  # noqa: E731
    model = torch.nn.Sequential(block(), block(), torch.nn.Linear(64, 8))
    x = torch.randn(32, 64)
    kept = {r: ak.compile(model, (x,), target="gc200", precision="fp16", training=True, recompute=r)
            for r in ("none", "full")}
    assert kept["full"].memory_plan.activation_bytes < kept["none"].memory_plan.activation_bytes
    backward = {r: dict(p.report.breakdown.sections)["bckwd"] for r, p in kept.items()}
    assert backward["full"] > backward["none"]  # the forward runs again in the backward pass
    opts = poptorch.Options()
    with pytest.raises(poptorch.PopTorchError, match="not a RecomputationType"):
        opts._Popart.set("autoRecomputation", 7)
    opts._Popart.set("autoRecomputation", 4)
    assert opts.recomputation == 4 and opts.clone().recomputation == 4


def test_name_scope_ops_compute_nothing_and_leave_the_captured_graph_alone():
    import accelkit as ak

    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    plain = ak.compile(net, (torch.randn(2, 8),), target="gc200", precision="fp32")
    for name, m in net.named_modules():
        m.register_forward_pre_hook(lambda _m, _i, name=name: torch.ops.poptorch.push_name_scope(name or "root"))
        m.register_forward_hook(lambda _m, _i, _o: torch.ops.poptorch.pop_name_scope())
    scoped = ak.compile(net, (torch.randn(2, 8),), target="gc200", precision="fp32")
    assert [k.ops for k in scoped.kernels] == [k.ops for k in plain.kernels]
    assert scoped.report.step_time_s == pytest.approx(plain.report.step_time_s)


def test_random_resized_crop_draws_torchvisions_box_and_the_deeper_resnets_have_their_sizes():
    from accelkit.vendor import vision_models
    from accelkit.vendor.synthetic import RandomResizedCrop, _crop, _image_size

    img = torch.rand(3, 60, 90)
    torch.manual_seed(1)
    for _ in range(50):
        i, j, h, w = RandomResizedCrop.get_params(img, (0.08, 1.0), (3 / 4, 4 / 3))
        assert 0 <= i <= 60 - h and 0 <= j <= 90 - w and h > 0 and w > 0
        assert 0.08 * 60 * 90 * 0.9 <= h * w <= 60 * 90 and 3 / 4 * 0.9 <= w / h <= 4 / 3 * 1.1
    assert RandomResizedCrop.get_params(img, (2.0, 3.0), (3 / 4, 4 / 3)) == (0, 5, 60, 80)  # the fallback
    assert RandomResizedCrop(32)(img).shape == (3, 32, 32)
    from accelkit.vendor.synthetic import RandomApply, RandomChoice

    # RandomChoice draws one transform a call, by its weights (the Model Zoo's mixup-or-cutmix on a batch and labels)
    choice = RandomChoice([lambda x, y: (x + 1, y), lambda x, y: (x - 1, y)], p=[3, 1])
    drawn = [float(choice(torch.zeros(1), 0)[0]) for _ in range(400)]
    assert set(drawn) == {1.0, -1.0} and 0.65 < drawn.count(1.0) / 400 < 0.85
    applied = [float(RandomApply([lambda x: x + 1, lambda x: x * 3], p=0.25)(torch.zeros(1))) for _ in range(400)]
    assert set(applied) == {0.0, 3.0} and 0.15 < applied.count(3.0) / 400 < 0.35
    assert _image_size(img) == [90, 60] and _crop(img, 1, 2, 3, 4).shape == (3, 3, 4)
    sizes = {n: sum(p.numel() for p in getattr(vision_models, n)().parameters()) for n in ("resnet101", "resnet152")}
    assert sizes == {"resnet101": 44_549_160, "resnet152": 60_192_808}  # torchvision's own models' counts


def test_for_loop_feeds_each_iterations_outputs_to_the_next_and_checks_its_arguments():
    def body(x, n):
        return x * 2, n + 1

    x, n = poptorch.for_loop(5, body, [torch.ones(3), torch.zeros(1)])
    assert torch.equal(x, torch.full((3,), 32.0)) and n.item() == 5
    assert poptorch.for_loop(0, body, [torch.ones(3), torch.zeros(1)])[0].sum() == 3  # no iteration: the inputs
    with pytest.raises(poptorch.PopTorchError, match="count must be a whole number"):
        poptorch.for_loop(2.5, body, [torch.ones(3), torch.zeros(1)])
    with pytest.raises(poptorch.PopTorchError, match="returned 1 tensor.*for 2 input"):
        poptorch.for_loop(2, lambda x, n: x, [torch.ones(3), torch.zeros(1)])
    t = torch.randn(4)
    assert poptorch.nop(t) is t


def test_begin_block_takes_a_function_and_runs_it_inside_a_block():
    from accelkit.facades.poptorch.blocks import Block

    seen: list = []
    Block._seen, saved = seen, Block._seen
    try:
        wrapped = poptorch.BeginBlock(lambda t: t + 1, "head", ipu_id=2)
        assert torch.equal(wrapped(torch.zeros(2)), torch.ones(2))
    finally:
        Block._seen = saved
    assert seen == [("head", 2)]
    with pytest.raises(poptorch.PopTorchError, match="an nn.Module or a function, not int"):
        poptorch.BeginBlock(3)


def test_mixed_half_and_float_products_compute_in_float_as_poptorch_3_does():
    from accelkit.facades.poptorch.partials import MixedUpcast

    a, b = torch.randn(4, 8), torch.randn(8, 3).half()
    with pytest.raises(RuntimeError):
        torch.matmul(a, b)  # PyTorch on a CPU refuses the mix
    with MixedUpcast():
        out = torch.matmul(a, b)
        normed = torch.nn.functional.layer_norm(torch.randn(2, 8), (8,), torch.ones(8).half(), torch.zeros(8).half())
        same = b.half() * torch.tensor(2.0)  # a product PyTorch promotes itself: its own rule (0-dim stays half)
    assert out.dtype == torch.float32 and torch.allclose(out, a @ b.float())
    assert normed.dtype == torch.float32 and same.dtype == torch.float16


def test_a_model_built_for_a_hub_name_has_the_real_models_positions():
    from accelkit.vendor import synthetic

    with synthetic.installed(hf=True, vision=False):
        import transformers

        gpt2 = transformers.GPT2LMHeadModel.from_pretrained("gpt2")
        bert = transformers.AutoModel.from_pretrained("bert-base-uncased")
    assert gpt2.config.n_positions == 1024 and gpt2.config.n_embd == 64
    assert bert.config.max_position_embeddings == 512 and bert.config.hidden_size == 64


def test_a_counter_in_a_plain_attribute_is_a_traced_constant_and_one_in_a_buffer_counts(monkeypatch):
    """PopTorch's user guide, "Buffers": a tensor kept as a plain attribute is baked into the program when the model
    is first traced (every call returns 1, the host keeps the trace's 1); a registered buffer counts on the device
    (1, 2) and comes back with copyWeightsToHost. A model with no input runs."""

    class Plain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.i = torch.tensor([0.0])

        def forward(self):
            self.i += 1
            return self.i

    class Buffered(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("i", torch.tensor([0.0]))

        def forward(self):
            self.i += 1
            return self.i

    plain = Plain()
    run = poptorch.inferenceModel(plain)
    assert [float(run()), float(run()), float(run())] == [1.0, 1.0, 1.0] and float(plain.i) == 1.0
    buffered = Buffered()
    run = poptorch.inferenceModel(buffered)
    assert [float(run()), float(run())] == [1.0, 2.0]
    run.copyWeightsToHost()
    assert float(buffered.i) == 2.0


def test_wrapping_copies_the_options_and_resolves_the_default_output_mode():
    opts = poptorch.Options()
    net = torch.nn.Linear(3, 2)
    infer = poptorch.inferenceModel(net, opts)
    train = poptorch.trainingModel(torch.nn.Sequential(net), opts)
    assert infer.options.output_mode == poptorch.OutputMode.All
    assert train.options.output_mode == poptorch.OutputMode.Final
    assert opts.output_mode == poptorch.OutputMode.Default  # the script's own object is left as it was
    opts.deviceIterations(4)
    assert infer.options.device_iterations == 1  # a later change does not reach a wrapped model


def test_updated_var_anchors_read_the_weight_after_the_step():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 2)

        def forward(self, x, y):
            return torch.nn.functional.mse_loss(self.fc(x), y)

    net = Net()
    before = net.fc.weight.detach().clone()
    opts = poptorch.Options()
    opts.anchorTensor("update", "UpdatedVar___fc.weight")
    opts.anchorTensor("grad", "Gradient___fc.weight")
    model = poptorch.trainingModel(net, opts, poptorch.optim.SGD(net.parameters(), lr=0.1))
    model(torch.randn(8, 4), torch.randn(8, 2))
    assert "UpdatedVar___fc.weight" in model.getTensorNames()
    updated, grad = model.getAnchoredTensor("update"), model.getAnchoredTensor("grad")
    assert torch.allclose(updated, before - 0.1 * grad, atol=1e-6) and torch.equal(updated, net.fc.weight.detach())


def test_checkpoints_named_for_their_depth_get_that_many_layers():
    from accelkit.vendor.synthetic import _named_depth

    assert _named_depth("mrm8488/bert-medium-finetuned-squadv2") == 8
    assert _named_depth("google/bert_uncased_L-4_H-256_A-4") == 4 and _named_depth("prajjwal1/bert-tiny") == 2
    assert _named_depth("distilbert-base-uncased") is None and _named_depth("gpt2") is None


def test_outputs_are_per_micro_batch_and_the_loss_is_the_output_that_depends_on_the_weights():
    """PopTorch's user guide (sumAnchorReturnType): a model returning ``loss, accuracy`` trains on the loss (the
    accuracy, from an argmax, has no gradient), and ``OutputMode.Sum`` sums over every device iteration and every
    accumulated micro-batch."""

    class Perceptron(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(6, 3)

        def forward(self, x, target):
            fc = self.fc(x)
            accuracy = (torch.argmax(fc, dim=-1) == target).float().sum() / float(target.numel())
            return torch.nn.functional.cross_entropy(fc, target), accuracy

    torch.manual_seed(0)
    x, y = torch.randn(60, 6), torch.randint(0, 3, (60,))
    net = Perceptron()
    ref = [float((torch.argmax(net.fc(x[i:i + 2]), -1) == y[i:i + 2]).float().mean()) for i in range(0, 60, 2)]
    opts = poptorch.Options().deviceIterations(3)
    opts.Training.gradientAccumulation(10)
    opts.outputMode(poptorch.OutputMode.Sum)
    model = poptorch.trainingModel(net, opts, torch.optim.SGD(net.parameters(), lr=0.0))
    loss, accuracy = model(x, y)
    assert accuracy.item() == pytest.approx(sum(ref), abs=1e-5)  # 30 micro-batches of 2, lr 0: the same weights
    assert loss.item() > 0


def test_execution_strategies_name_their_stages_and_phased_execution_streams_the_weights():
    strategy = poptorch.ShardedExecution("B1", "B2")
    strategy.stage("B2").ipu(1)
    assert strategy.block_ipus() == {"B1": 0, "B2": 1}
    with pytest.raises(poptorch.PopTorchError, match="Unknown block 'B3'"):
        strategy.stage("B3")
    phased = poptorch.ParallelPhasedExecution([poptorch.Stage("A").ipu(0), poptorch.Stage("B").ipu(2)],
                                              poptorch.Phase("C"))
    phased.phase(1).ipus(1)
    assert phased.block_ipus() == {"A": 0, "B": 2, "C": 1}
    assert phased.sendTensorsOffChipAfterFwd().liveness == poptorch.Liveness.OffChipAfterFwd
    with pytest.raises(poptorch.PopTorchError, match="more than one stage"):
        poptorch.SerialPhasedExecution("A", "A")
    with pytest.raises(poptorch.PopTorchError, match="needs its phases"):
        poptorch.SerialPhasedExecution()

    class TwoBlocks(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 2)

        def forward(self, x):
            with poptorch.Block("A"):
                x = torch.relu(self.a(x))
            with poptorch.Block("B"):
                return self.b(x)

    serial = poptorch.SerialPhasedExecution("A", "B")
    serial.stage("A").ipu(0)
    serial.stage("B").ipu(0)
    opts = poptorch.Options()
    opts.setExecutionStrategy(serial)
    model = poptorch.inferenceModel(TwoBlocks(), opts)
    assert model(torch.randn(4, 8)).shape == (4, 2)
    assert model.program.memory_plan.mode == "streaming-memory"


def test_compile_and_export_writes_weights_not_code_and_load_restores_them(tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from accelkit.facades.poptorch import export

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(5, 5)

        def forward(self, x, target=None):
            out = self.fc(x)
            return (out, torch.nn.functional.mse_loss(out, target)) if self.training else out

    torch.manual_seed(0)
    net = Net()
    x, t = torch.randn(4, 5), torch.randn(4, 5)
    training = poptorch.trainingModel(net, poptorch.Options())
    path = tmp_path / "training.poptorch"
    training.compileAndExport(path, x, t)
    assert set(load_file(str(path))) == {"fc.weight", "fc.bias"}  # safetensors: tensors and a JSON header only
    with torch.no_grad():
        net.fc.weight.zero_()  # the file keeps the weights of the moment it was written
    restored = poptorch.load(path, edit_opts_fn=lambda opts: opts.deviceIterations(1))
    assert not torch.equal(net.fc.weight, torch.zeros(5, 5)) and restored.training
    restored(x, t)
    validation = poptorch.inferenceModel(restored)  # wraps the same model: the weights are shared
    assert validation.model is net and validation(x).shape == (4, 5)
    other = Net()
    poptorch.trainingModel(other, poptorch.Options()).loadExecutable(path)
    assert torch.equal(other.fc.bias, dict(load_file(str(path)))["fc.bias"])
    with pytest.raises(poptorch.PopTorchError, match="exported from a trainingModel; this is a inferenceModel"):
        poptorch.inferenceModel(Net()).loadExecutable(path)
    monkeypatch.setattr(export, "_EXPORTED", {})  # another process: the model object is not in the file
    with pytest.raises(poptorch.PopTorchError, match="holds Net's weights but not the model.*never unpickles"):
        poptorch.load(path)
    (tmp_path / "real.poptorch").write_bytes(b"\x00" * 64)
    with pytest.raises(poptorch.PopTorchError, match="not an executable accelkit exported"):
        poptorch.load(tmp_path / "real.poptorch")
    assert not list(tmp_path.glob("*.part"))


GROUPED = '''
import sys

import numpy as np
import poptorch
import torch


class Product(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = torch.nn.Parameter(w)

    def forward(self, x):
        y = x @ self.w
        return y, poptorch.identity_loss(y ** 2, reduction="mean")


columns, rows = 4, 2  # the weight's column blocks and the input's row blocks, one pair per replica
weight_groups, input_groups = {
    "orthogonal-weights": (poptorch.enums.CommGroupType.Orthogonal, poptorch.enums.CommGroupType.Consecutive),
    "consecutive-weights": (poptorch.enums.CommGroupType.Consecutive, poptorch.enums.CommGroupType.Orthogonal),
}[sys.argv[1]]
rng = np.random.default_rng(7)
x_all = torch.tensor(rng.normal(size=(16, 20)), dtype=torch.float32)
w_all = torch.tensor(rng.normal(size=(20, 24)) / 5, dtype=torch.float32)

# the whole product on the host: the reference
w_ref = torch.nn.Parameter(w_all.clone())
opt = torch.optim.SGD([w_ref], lr=0.05)
reference = []
for _ in range(3):
    opt.zero_grad()
    loss = torch.mean((x_all @ w_ref) ** 2)
    loss.backward()
    opt.step()
    reference.append(float(loss.detach()))

# the same on 8 replicas: each a block of rows times a block of columns
model = Product(w_all.reshape(20, columns, 24 // columns).permute(1, 0, 2).contiguous())
opts = poptorch.Options().replicationFactor(rows * columns).outputMode(poptorch.OutputMode.All)
opts.inputReplicaGrouping(columns, input_groups)
ipu = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.05))
ipu.w.replicaGrouping(weight_groups, rows, poptorch.enums.VariableRetrievalMode.OnePerGroup)
x = x_all.reshape(rows, 16 // rows, 20)
for step in range(3):
    y, losses = ipu(x)
    print("step", step, tuple(y.shape), tuple(losses.shape), float(losses.sum()) / (rows * columns), reference[step])
w_final = model.w.detach().permute(1, 0, 2).reshape(20, 24)
print("weights", float((w_final - w_ref.detach()).abs().max()))
'''


@pytest.mark.parametrize("layout", ["orthogonal-weights", "consecutive-weights"])
def test_replica_grouped_weights_and_inputs_compute_the_whole_product_as_the_user_guide_does(tmp_path, monkeypatch,
                                                                                             layout):
    """PopTorch's user guide's replica_grouped_weights.py: a weight sharded over groups of replicas
    (``poptorch_model.w.replicaGrouping``), the inputs over others (``opts.inputReplicaGrouping``); every replica
    computes its block, the losses come back one per replica, and the steps equal the whole product's on the host."""
    from accelkit.vendor import run_script

    script = tmp_path / "grouped.py"
    script.write_text(GROUPED)
    monkeypatch.chdir(tmp_path)
    run = run_script(script, [layout], synthetic_data=True, quiet=True)
    out = (run.output or "") + (run.error or "")
    assert run.exit_code == 0, out
    steps = [line.split() for line in out.splitlines() if line.startswith("step ")]
    assert len(steps) == 3
    for parts in steps:
        assert parts[2:6] == ["(8,", "8,", "6)", "(8,)"]  # 8 replicas' (8 x 6) blocks, 8 losses
        assert float(parts[6]) == pytest.approx(float(parts[7]), rel=1e-5)
    assert float(steps[0][7]) > float(steps[2][7])  # it trains
    assert float(next(line for line in out.splitlines() if line.startswith("weights")).split()[1]) < 1e-5


def test_replicas_each_run_their_own_micro_batch_as_on_the_ipus():
    """Replicated training: one loss per replica comes back (OutputMode.All), a batch norm normalises each
    replica's own micro-batch, the update is the mean of the replicas' gradients and the host keeps the first
    replica's running statistics; what the model computes equals plain PyTorch run replica by replica."""
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(6, 4)
            self.bn = torch.nn.BatchNorm1d(4)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            out = self.bn(self.fc(x))
            return out, torch.nn.functional.cross_entropy(out, y)

    net = Net()
    ref = Net()
    ref.load_state_dict(net.state_dict())
    x, y = torch.randn(8, 6), torch.randint(0, 4, (8,))
    opts = poptorch.Options().replicationFactor(2).outputMode(poptorch.OutputMode.All)
    out, losses = poptorch.trainingModel(net, opts, torch.optim.SGD(net.parameters(), lr=0.1))(x, y)

    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    state = {k: v.clone() for k, v in ref.state_dict().items()}
    per_replica, grads, outs, first_stats = [], [], [], None
    for r in range(2):
        ref.load_state_dict(state)
        opt.zero_grad()
        o, loss = ref(x[4 * r:4 * r + 4], y[4 * r:4 * r + 4])
        loss.backward()
        per_replica.append(loss.detach())
        outs.append(o.detach())
        grads.append([p.grad.clone() for p in ref.parameters()])
        first_stats = first_stats if first_stats is not None else ref.bn.running_mean.clone()
    assert losses.shape == (2,) and torch.allclose(losses, torch.stack(per_replica))
    assert torch.allclose(out, torch.cat(outs), atol=1e-6)
    ref.load_state_dict(state)
    for p, g0, g1 in zip(ref.parameters(), *grads, strict=True):
        p.grad = (g0 + g1) / 2
    opt.step()
    assert torch.allclose(net.fc.weight, ref.fc.weight, atol=1e-6)
    assert torch.allclose(net.bn.running_mean, first_stats)
    assert int(net.bn.num_batches_tracked) == 1


def test_replica_grouping_is_checked_as_poptorch_checks_it():
    enums = poptorch.enums
    assert enums.CommGroupType.Consecutive == 1 and enums.VariableRetrievalMode.AllReplicas == 2
    with pytest.raises(poptorch.PopTorchError, match="must be a factor of replicationFactor"):
        poptorch.Options().replicationFactor(8).inputReplicaGrouping(3, enums.CommGroupType.Consecutive)
    with pytest.raises(poptorch.PopTorchError, match="cannot be All"):
        poptorch.Options().replicationFactor(8).inputReplicaGrouping(4, enums.CommGroupType.All)

    class Scale(torch.nn.Module):
        def __init__(self, w: torch.Tensor) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(w)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            y = x * self.w
            return y, poptorch.identity_loss(y.sum(), reduction="sum")

    def grouped(w: torch.Tensor, kind: int = enums.CommGroupType.Consecutive, size: int = 2,
                mode: int = enums.VariableRetrievalMode.OnePerGroup) -> Any:
        m = poptorch.trainingModel(Scale(w), poptorch.Options().replicationFactor(4))
        m.w.replicaGrouping(kind, size, mode)
        return m

    with pytest.raises(poptorch.PopTorchError, match=r"one value per group along its first dimension; its shape is \(3,"):
        grouped(torch.ones(3, 5))(torch.ones(4, 5))
    with pytest.raises(poptorch.PopTorchError, match="AllReplicas returns one value per replica"):
        grouped(torch.ones(2, 5), mode=enums.VariableRetrievalMode.AllReplicas)(torch.ones(4, 5))
    m = grouped(torch.ones(4, 5), kind=enums.CommGroupType.NoGrouping)  # each replica its own value
    y, _ = m(torch.arange(4.0)[:, None].expand(4, 5).contiguous())
    assert y.shape == (4, 5) and tuple(m.w.shape) == (4, 5)
    with pytest.raises(poptorch.PopTorchError, match="after the model's first call"):
        m.w.replicaGrouping(enums.CommGroupType.NoGrouping, 0, enums.VariableRetrievalMode.OnePerGroup)
    with pytest.raises(poptorch.PopTorchError, match="must be a multiple of deviceIterations"):
        opts = poptorch.Options().replicationFactor(4).inputReplicaGrouping(2, enums.CommGroupType.Consecutive)
        poptorch.inferenceModel(torch.nn.Linear(5, 5), opts)(torch.ones(3, 5))


def test_only_a_script_modules_names_are_set_aside_never_the_standard_librarys_or_torch(tmp_path, monkeypatch):
    import types

    from accelkit.vendor import _shadowing_modules

    for name in ("json.py", "torch.py", "helpers.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "__init__.py").write_text("")
    (tmp_path / "run.py").write_text("")
    for name in ("datasets", "datasets.utils", "helpers"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    assert sorted(_shadowing_modules(tmp_path / "run.py")) == ["datasets", "datasets.utils", "helpers"]


ERRORS = '''
import poptorch
import torch
from poptorch.poptorch_core import TestErrorType

seen = {}
for kind in TestErrorType.__members__.values():
    try:
        poptorch.poptorch_core._throwTestError(kind)
    except poptorch.RecoverableError as e:
        seen[kind.name] = ("recoverable", e.recovery_action, e.type)
    except poptorch.UnrecoverableError as e:
        seen[kind.name] = ("unrecoverable", e.type, e.location.splitlines()[0])
    except poptorch.Error as e:
        seen[kind.name] = ("error", e.type, e.message)
model = poptorch.inferenceModel(torch.nn.Linear(2, 2))
print(model(torch.ones(1, 2)).shape)
for name, what in seen.items():
    print(name, *what)
'''


def test_poptorchs_error_classes_and_its_test_hook_as_the_user_guides_error_handling_uses_them(tmp_path,
                                                                                              monkeypatch):
    """poptorch.Error / RecoverableError / UnrecoverableError with their type, message, location and recovery
    action, and poptorch.poptorch_core's TestErrorType and _throwTestError (PopTorch's C++ extension otherwise
    refused, saying so)."""
    from accelkit.vendor import run_script

    script = tmp_path / "errors.py"
    script.write_text(ERRORS)
    monkeypatch.chdir(tmp_path)
    run = run_script(script, [], synthetic_data=True, quiet=True)
    out = (run.output or "") + (run.error or "")
    assert run.exit_code == 0, out
    lines = dict(line.split(" ", 1) for line in out.splitlines() if line.split(" ", 1)[0] in
                 poptorch.poptorch_core.TestErrorType.__members__)
    assert len(lines) == 8
    assert lines["PoplarRecoverableFullReset"] == "recoverable FULL_RESET poplar_recoverable_runtime_error"
    assert lines["PoplarUnrecoverable"].startswith("unrecoverable poplar_unrecoverable_runtime_error")
    assert lines["Popart"] == "error popart_exception This is a Popart error"
    assert lines["Poplibs"].startswith("error poplibs_exception")
    assert "poptorch.poptorch_core" in run.served
    with pytest.raises(poptorch.Error, match="'poplar_recoverable_runtime_error': Reboot needed\nRecovery action"):
        poptorch.poptorch_core._throwTestError(poptorch.poptorch_core.TestErrorType.PoplarRecoverableFullReset)
    with pytest.raises(poptorch.PopTorchError, match=r"C\+\+ extension"):
        poptorch.poptorch_core.compileWithTrace  # noqa: B018 - an internal the simulation does not have


def test_a_replicated_model_keeps_the_blocks_its_forward_enters():
    """poptorch.Block inside forward places a pipeline's stages; with replicationFactor 2 the blocks are still
    found (the replicas are split after), so the model runs as 2 replicas of a 2-IPU pipeline."""
    class TwoStages(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(6, 6), torch.nn.Linear(6, 3)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            with poptorch.Block("first", ipu_id=0):
                h = torch.relu(self.a(x))
            with poptorch.Block("second", ipu_id=1):
                y = self.b(h)
            return y, poptorch.identity_loss(y.pow(2).mean(), reduction="mean")

    model = poptorch.trainingModel(TwoStages(), poptorch.Options().replicationFactor(2))
    y, loss = model(torch.randn(4, 6))
    assert model.pipeline.ipus == 2 and model.chips == 4
    assert y.shape == (4, 3) and torch.isfinite(loss).all()


class _QAModel(torch.nn.Module):
    """A question-answering head over two encoder layers, with parallelize / deparallelize as Graphcore's BERT
    application writes them (blocks placed for training, taken off, placed again for a shorter inference pipeline)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(32, 16)
        self.layers = torch.nn.ModuleList(torch.nn.Linear(16, 16) for _ in range(2))
        self.qa = torch.nn.Linear(16, 2)

    def parallelize(self, layer_ipus: list[int]) -> _QAModel:
        for layer, ipu in zip(self.layers, layer_ipus, strict=True):
            poptorch.BeginBlock(layer, f"Encoder{ipu}", ipu_id=ipu)
        return self

    def deparallelize(self) -> _QAModel:
        for m in self.modules():
            if m is not self:
                poptorch.removeBlocks(m)
        return self

    def forward(self, ids: torch.Tensor, start: torch.Tensor | None = None) -> Any:
        h = self.embed(ids)
        for layer in self.layers:
            h = torch.tanh(layer(h))
        logits = self.qa(h)[..., 0]
        if start is None:
            return logits
        return logits, poptorch.identity_loss(torch.nn.functional.cross_entropy(logits, start), reduction="mean")


def test_remove_blocks_lets_an_application_place_its_stages_again_for_inference():
    """run_squad-shaped: train on a 3-IPU pipeline, deparallelize() with poptorch.removeBlocks, parallelize again on
    2 IPUs for validation: the inference model has the new stages only, and computes the trained model."""
    model = _QAModel().parallelize([1, 2])
    ids, start = torch.randint(0, 32, (8, 6)), torch.randint(0, 6, (8,))
    opts = poptorch.Options().deviceIterations(1)
    train = poptorch.trainingModel(model, opts, poptorch.optim.AdamW(model.parameters(), lr=1e-2))
    train(ids, start)
    assert train.pipeline.ipus == 3
    model.eval()
    model.deparallelize()
    assert poptorch.pipeline_plan(model).ipus == 1
    model.parallelize([0, 1])
    infer = poptorch.inferenceModel(model, poptorch.Options())
    assert infer.pipeline.ipus == 2
    with torch.no_grad():
        assert torch.allclose(infer(ids), model(ids), atol=1e-5)
    with pytest.raises(poptorch.PopTorchError, match="removeBlocks takes an nn.Module"):
        poptorch.removeBlocks(lambda x: x)  # type: ignore[arg-type]


def test_optimizer_variable_attrs_mark_constants_and_refuse_a_change_the_program_could_not_take():
    """BERT's optimization.py: ``optimizer.variable_attrs.markAsConstant("weight_decay")`` (and LAMB's
    ``max_weight_norm``); a learning rate left variable follows its schedule, a constant that changes after the
    program is compiled is refused, naming markAsVariable; an unknown attribute is refused as PopTorch refuses it."""
    model = _QAModel()
    ids, start = torch.randint(0, 32, (4, 6)), torch.randint(0, 6, (4,))
    lamb = poptorch.optim.LAMB(model.parameters(), lr=1e-3, weight_decay=0.0, max_weight_norm=None,
                               loss_scaling=16.0)
    lamb.variable_attrs.markAsConstant("max_weight_norm")
    lamb.variable_attrs.markAsConstant("weight_decay")
    assert lamb.variable_attrs.isConstant("weight_decay") and not lamb.variable_attrs.isConstant("lr")
    assert not lamb.variable_attrs.isConstant("loss_scaling")
    with pytest.raises(poptorch.PopTorchError, match="Unknown attribute 'momentum'"):
        lamb.variable_attrs.markAsConstant("momentum")
    train = poptorch.trainingModel(model, poptorch.Options(), lamb)
    train(ids, start)
    for group in lamb.param_groups:
        group["lr"] = 5e-4  # variable: a schedule may change it
    train(ids, start)
    for group in lamb.param_groups:
        group["weight_decay"] = 0.01
    with pytest.raises(poptorch.PopTorchError, match="(?s)'weight_decay' was marked constant.*markAsVariable"):
        train(ids, start)
    sgd = poptorch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    sgd.variable_attrs.markAsConstant("velocity_scaling")
    sgd.variable_attrs.markAsVariable("velocity_scaling")
    assert not sgd.variable_attrs.isConstant("velocity_scaling")
    assert poptorch.optim.VariableAttributes(["lr"], ["lr", "momentum"]).isConstant("momentum")


def test_get_latency_is_the_last_calls_modelled_iterations_and_needs_a_run_first():
    """run_benchmark.py-shaped: ``inference_model.getLatency()`` after each call gives (min, max, average) in
    seconds: the MODELLED time of each device iteration of that call."""
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                              torch.nn.Flatten(), torch.nn.Linear(8, 10)).eval()
    model = poptorch.inferenceModel(net, poptorch.Options().deviceIterations(3))
    with pytest.raises(poptorch.PopTorchError, match="has not run yet"):
        model.getLatency()
    model(torch.randn(6, 3, 16, 16))
    low, high, mean = model.getLatency()
    assert 0 < low <= mean <= high
    assert 3 * mean == pytest.approx(model.simulated_time_s)


def _tf_rmsprop_reference(w, grads, lr, alpha, eps, momentum, wd):
    """TensorFlow's RMSProp written out for the test (ones as the first mean square, eps inside the root)."""
    ms, mom = torch.ones_like(w), torch.zeros_like(w)
    for g in grads:
        g = g + wd * w
        ms = alpha * ms + (1 - alpha) * g * g
        mom = momentum * mom + lr * g / torch.sqrt(ms + eps)
        w = w - mom
    return w


def test_rmsprop_tf_variant_is_tensorflows_update_and_the_default_is_pytorchs():
    """train.py's ``rmsprop_tf`` optimizer (EfficientNet's configs): ``RMSprop(..., use_tf_variant=True)``
    follows TensorFlow's RMSProp; without it the update is PyTorch's, which differs."""
    torch.manual_seed(0)
    w0 = torch.randn(4, 3)
    grads = [torch.randn(4, 3) for _ in range(3)]
    settings = {"lr": 0.05, "alpha": 0.9, "eps": 1e-3, "momentum": 0.9, "weight_decay": 1e-2}

    def run(**extra: Any) -> torch.Tensor:
        w = torch.nn.Parameter(w0.clone())
        opt = poptorch.optim.RMSprop([w], loss_scaling=8.0, **settings, **extra)
        for g in grads:
            w.grad = g * 8.0  # the loss-scaled gradient the backward pass hands over
            opt.step()
        return w.detach()

    expected = _tf_rmsprop_reference(w0, grads, settings["lr"], settings["alpha"], settings["eps"],
                                     settings["momentum"], settings["weight_decay"])
    assert torch.allclose(run(use_tf_variant=True), expected, atol=1e-6)
    assert not torch.allclose(run(), expected, atol=1e-3)
    assert torch.allclose(run(use_tf_variant=False), run(), atol=0)


class _MixupNet(torch.nn.Module):
    """ViT-pretraining-shaped: one mixup coefficient per micro-batch, broadcast over that micro-batch's images."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 4, stride=4)
        self.head = torch.nn.Linear(4, 5)

    def forward(self, images: torch.Tensor, labels: torch.Tensor, lam: torch.Tensor) -> Any:
        mixed = lam * images + (1.0 - lam) * torch.roll(images, shifts=1, dims=0)  # [1] against [micro, 3, H, W]
        logits = self.head(self.conv(mixed).mean(dim=(2, 3)))
        loss = lam * torch.nn.functional.cross_entropy(logits, labels, reduction="none") + \
            (1 - lam) * torch.nn.functional.cross_entropy(logits, torch.roll(labels, 1, 0), reduction="none")
        return logits, poptorch.identity_loss(loss, reduction="mean")


def test_a_per_micro_batch_input_is_captured_on_one_micro_batch_and_sum_reduction_adds_the_gradients():
    """pretrain.py-shaped: images, labels and one mixup coefficient per micro-batch in each call (gradient
    accumulation 2: two coefficients for four images) train, each micro-batch with its own coefficient; with
    ``ReductionType.Sum`` (its configs' ``reduction_type: sum``) the update adds the micro-batches' gradients, so
    SGD at lr / 2 with Sum takes the step SGD at lr takes with Mean."""
    images, labels = torch.randn(4, 3, 8, 8), torch.randint(0, 5, (4,))
    lam = torch.tensor([0.7, 0.2])
    loader_opts = poptorch.Options()
    loader_opts.Training.gradientAccumulation(2)
    loader = poptorch.DataLoader(loader_opts, torch.utils.data.TensorDataset(images, labels), batch_size=2,
                                 async_options={"sharing_strategy": poptorch.SharingStrategy.SharedMemory,
                                                "load_indefinitely": True},
                                 mode=poptorch.DataLoaderMode.AsyncRebatched)
    assert [b[0].shape[0] for b in loader] == [4]
    assert int(poptorch.enums.SharingStrategy.FileSystem) == 1
    weights = {}
    for reduction, lr in ((poptorch.ReductionType.Mean, 0.1), (poptorch.ReductionType.Sum, 0.05)):
        torch.manual_seed(0)
        net = _MixupNet()
        opts = poptorch.Options()
        opts.Training.gradientAccumulation(2).accumulationAndReplicationReductionType(reduction)
        train = poptorch.trainingModel(net, opts, poptorch.optim.SGD(net.parameters(), lr=lr))
        logits, _loss = train(images, labels, lam)
        assert logits.shape == (2, 5)  # the last micro-batch's outputs (OutputMode.Final)
        weights[reduction] = net.head.weight.detach().clone()
    assert torch.allclose(weights[poptorch.ReductionType.Mean], weights[poptorch.ReductionType.Sum], atol=1e-6)
    torch.manual_seed(0)
    reference = _MixupNet()
    start = reference.head.weight.detach().clone()
    assert not torch.allclose(start, weights[poptorch.ReductionType.Mean])
    grads = []
    for half in range(2):  # each micro-batch with its own coefficient, the gradients averaged (Mean)
        rows = slice(2 * half, 2 * half + 2)
        reference.zero_grad()
        reference(images[rows], labels[rows], lam[half:half + 1])[1].backward()
        grads.append(reference.head.weight.grad.clone())
    assert torch.allclose(start - 0.1 * (grads[0] + grads[1]) / 2, weights[poptorch.ReductionType.Mean], atol=1e-6)


def test_resized_crop_is_the_crop_resized_as_timms_random_resized_crop_calls_it():
    """MAE's fine-tuning transforms (timm's ``RandomResizedCropAndInterpolation``) call torchvision's
    ``functional.resized_crop(img, top, left, height, width, size, interpolation)``: the box, resized."""
    from PIL import Image

    from accelkit.vendor.synthetic import _crop, _resize, _resized_crop

    img = torch.rand(3, 40, 50)
    out = _resized_crop(img, 5, 10, 20, 30, [16, 24])
    assert out.shape == (3, 16, 24)
    assert torch.equal(out, _resize(_crop(img, 5, 10, 20, 30), [16, 24]))
    pil = Image.new("RGB", (50, 40))
    assert _resized_crop(pil, 5, 10, 20, 30, (16, 16), interpolation=None).size == (16, 16)


LIGHTNING_TRAIN = '''
import sys

import poptorch
import torch

sys.path.append("../pytorch")
import datasets
import models

opts = poptorch.Options()
opts.Training.gradientAccumulation(2)
global_batch = 4 * opts.Training.gradient_accumulation * opts.Distributed.num_distributed_processes
print("global batch", global_batch, "process", opts.Distributed.distributed_process_id)
model = models.get_model()
data = poptorch.DataLoader(opts, datasets.get_data(32), batch_size=4)
trainer = poptorch.trainingModel(model, opts, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.05))
for step, (x, y) in enumerate(data):
    trainer(x, y)
    if step == 1:
        break
print(f"trained {step + 1} steps")
'''


def test_a_script_that_appends_its_sibling_application_to_the_path_keeps_its_packages(tmp_path, monkeypatch):
    """Graphcore's PyTorch Lightning CNNs (``sys.path.append("../pytorch")``, then the CNN application's ``datasets``
    and ``models``): the sibling folder's ``datasets`` package is the application's, not the Hugging Face stand-in,
    the torchvision it imports is stood in for, and ``opts.Distributed.num_distributed_processes`` (PopTorch's
    attribute) is one process."""
    from accelkit.vendor import _appended_folders, run_script

    app = tmp_path / "pytorch"
    for folder in ("datasets", "models"):
        (app / folder).mkdir(parents=True)
    (app / "datasets" / "__init__.py").write_text(CNN_DATASETS_INIT)
    (app / "datasets" / "dataset.py").write_text(CNN_DATASET)
    (app / "models" / "__init__.py").write_text("from .models import get_model\n")
    (app / "models" / "models.py").write_text(CNN_MODELS)
    (tmp_path / "pytorch-lightning").mkdir()
    script = tmp_path / "pytorch-lightning" / "train_lightning.py"
    script.write_text(LIGHTNING_TRAIN)
    assert _appended_folders(script) == [app.resolve()]
    monkeypatch.chdir(script.parent)
    run = run_script(script, [], synthetic_data=True, quiet=True)
    assert run.exit_code == 0, (run.output or "") + (run.error or "")
    assert "global batch 8 process 0" in run.output and "trained 2 steps" in run.output
    opts = poptorch.Options()
    assert (opts.Distributed.num_distributed_processes, opts.Distributed.distributed_process_id) == (1, 0)
