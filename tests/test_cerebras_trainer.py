"""What the Cerebras Model Zoo 2.x Trainer (``cszoo fit``, ``python run.py CPU|CSX --params ...``) reads from
``cerebras.pytorch`` and ``cerebras.appliance``, answered by accelkit's facade (accelkit.facades.cerebras.zoo2).

The Model Zoo itself is not in this repository; ``TRAINER_SHAPED`` is a script written for these tests in the
Trainer's order (a backend from its type, the compiled model, cstorch's optimizer and schedule, a DataExecutor
checkpointing on a Schedule, a traced step, the rate tracker, hooks on tensors reaching the host, checkpoints
through the storage classes). It runs through the launcher on the simulated CS-2 and on cstorch's CPU backend,
where its losses equal plain PyTorch's."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import math
import re
import sys
from collections import namedtuple
from pathlib import Path

import pytest
import torch

from accelkit.facades.cerebras import optim, zoo2
from accelkit.facades.cerebras.clock import CerebrasError

TRAINER_SHAPED = '''
import json, sys
import torch
import cerebras.pytorch as cstorch
from cerebras.pytorch.backend import BackendType, current_backend_impl, get_backend_args
from cerebras.pytorch.backend.ltc_backend import register_after_tensor_to_cpu
from cerebras.pytorch.utils.data import Schedule
from cerebras.pytorch.utils.data.utils import infer_batch_size
from cerebras.appliance.log import ClassLogger, named_class_logger
from cerebras.appliance.storage import StorageWriter, StorageDeleter
import cerebras.pytorch.distributed as dist

kind = sys.argv[1]

@named_class_logger("ShapedTrainer")
class ShapedTrainer(ClassLogger):
    pass

backend_type = BackendType.from_str(kind.lower())
args = {k: v for k, v in get_backend_args(backend_type).items() if k == "cluster_config"}
if backend_type.is_csx:
    args["cluster_config"] = dist.ClusterConfig(num_csx=1)
backend = cstorch.backend(backend_type, **args)
assert current_backend_impl() is backend and cstorch.backend() is backend
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
compiled = cstorch.compile(model, backend)
assert model.device == torch.device("cpu")
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.1)
scheduler = cstorch.optim.lr_scheduler.ConstantLR(optimizer, learning_rate=0.05)
g = torch.Generator().manual_seed(1)
data = [(torch.randn(8, 12, generator=g), torch.randint(0, 3, (8,), generator=g)) for _ in range(6)]
loader = cstorch.utils.data.DataLoader(lambda: data)
arrived = []
handle = register_after_tensor_to_cpu(lambda t, name: arrived.append(name))
tracker = cstorch.utils.tracker.RateTracker()
every_other = Schedule([Schedule.Range(start=1, end=6, step=2, include_last=True)])
executor = cstorch.utils.data.DataExecutor(loader, num_steps=6, checkpoint_steps=every_other,
                                           profiler_activities=[])

@cstorch.trace
def step(x, y):
    loss = torch.nn.functional.cross_entropy(compiled(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    scheduler.step()
    return loss

@cstorch.checkpoint_closure
def save(path):
    cstorch.save({"model": model.state_dict()}, path)
    assert StorageWriter.path_exists(path)

losses, saved = [], []
for batch in executor:
    losses.append(step(*batch).item())
    tracker.add(infer_batch_size(batch))
    if executor.on_checkpoint_step:
        path = f"ckpt_{executor.user_iteration}.mdl"
        save(path)
        saved.append(executor.iteration)
handle.remove()
StorageDeleter.get(f"ckpt_{executor.user_iteration}.mdl").delete()
json.dump({"losses": losses, "saved": saved, "arrived": len(arrived), "samples": tracker.total_count,
           "executor_samples": executor.profiler.rate_tracker.total_samples,
           "global_rate": tracker.global_rate(), "artifacts": str(executor.artifact_dir),
           "left": sorted(str(p) for p in __import__("pathlib").Path(".").glob("ckpt_*"))},
          open("result.json", "w"))
'''


def _plain_losses() -> list[float]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    data = [(torch.randn(8, 12, generator=g), torch.randint(0, 3, (8,), generator=g)) for _ in range(6)]
    losses = []
    for i, (x, y) in enumerate(data):
        for group in opt.param_groups:
            group["lr"] = 0.05  # ConstantLR sets the rate from the first step on
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
        del i
    return losses


@pytest.mark.parametrize("kind", ["CPU", "CSX"])
def test_trainer_shaped_script_trains_checkpoints_on_its_schedule_and_equals_pytorch(kind, tmp_path, monkeypatch,
                                                                                      capsys):
    from accelkit.vendor import run_script

    (tmp_path / "trainer_shaped.py").write_text(TRAINER_SHAPED)
    monkeypatch.chdir(tmp_path)
    run = run_script(tmp_path / "trainer_shaped.py", [kind])
    out = capsys.readouterr().out
    assert run.exit_code == 0, f"{run.error}\n{out}"
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["losses"] == _plain_losses()  # fp32 on both backends: exactly PyTorch's numbers
    assert result["saved"] == [1, 3, 5]  # the Schedule's 0-indexed steps; the last one included
    assert result["left"] == ["ckpt_2.mdl", "ckpt_4.mdl"]  # the deleter removed the last
    assert result["samples"] == 48 and result["executor_samples"] == 48
    assert Path(result["artifacts"]).name == "000001"
    if kind == "CSX":
        assert result["arrived"] == 6  # one loss tensor handed back per step
        assert "MODELLED samples/s" in out
        modelled = re.search(r"MODELLED on wse2 running cstorch: ([\d.]+) s", out)
        assert modelled and result["global_rate"] == pytest.approx(48 / float(modelled.group(1)), rel=0.02)
    else:
        assert result["arrived"] == 0  # the CPU backend's tensors never leave the host
        assert "MODELLED samples/s" not in out


def test_schedule_steps_match_cstorch_semantics():
    s = zoo2.Schedule([zoo2.Schedule.Range(start=4, end=18, step=5, include_last=True)])
    assert list(s) == [4, 9, 14, 17] and len(s) == 4 and s.final_step == 17
    assert [i for i in range(20) if s.match(i)] == [4, 9, 14, 17]
    assert s.next_immediate_step(10) == 14 and s.next_immediate_step(0) == 4 and s.next_immediate_step(16) == 17
    with pytest.raises(ValueError, match="exceeds the last interval step"):
        s.next_immediate_step(18)
    with pytest.raises(ValueError, match="non-overlapping"):
        zoo2.Schedule([zoo2.Schedule.Range(0, 10, 2, False), zoo2.Schedule.Range(5, 12, 1, False)])
    with pytest.raises(ValueError, match="step"):
        zoo2.Schedule.Range(0, 10, 0, False)


def test_nested_batches_scopes_and_batch_size(monkeypatch):
    Pair = namedtuple("Pair", "a b")
    tree = {"x": [torch.zeros(3, 2), (torch.ones(3), 5)], "y": Pair(torch.zeros(3, 1), "label")}
    leaves, spec = torch.utils._pytree.tree_flatten(tree)
    scopes = [".".join(s) for s in zoo2.recurse_spec(spec)]
    assert len(scopes) == len(leaves) and scopes[0] == "x.0" and scopes[-1] == "y.1"
    assert [".".join(s) for s, _ in zoo2.visit_torch_tensors(tree)] == ["x.0", "x.1.0", "y.0"]
    assert zoo2.infer_batch_size(tree) == 3
    monkeypatch.setattr(zoo2, "use_cs", lambda: False)  # off the system: a warning, no batch size
    with pytest.warns(UserWarning, match="non-uniform"):
        assert zoo2.infer_batch_size({"a": torch.zeros(2), "b": torch.zeros(3)}) is None
    monkeypatch.setattr(zoo2, "use_cs", lambda: True)  # on it: an error
    with pytest.raises(RuntimeError, match="uniform batch sizes"):
        zoo2.infer_batch_size({"a": torch.zeros(2), "b": torch.zeros(3)})
    with pytest.raises(RuntimeError, match="could not detect any torch tensors"):
        zoo2.infer_batch_size({"a": 1})


def test_optimizers_and_schedules_have_cstorchs_classes_and_real_annotations():
    assert issubclass(optim.SGD, optim.Optimizer) and issubclass(optim.SGD, torch.optim.SGD)
    assert [c.__name__ for c in zoo2.retrieve_all_subclasses(optim.Optimizer)] == ["SGD", "Adam", "AdamW", "Adafactor"]
    sig = inspect.signature(optim.LinearLR.__init__)
    assert sig.parameters["optimizer"].annotation is torch.optim.Optimizer  # a type, as the Zoo's configs need
    assert sig.parameters["initial_learning_rate"].annotation is float
    assert issubclass(optim.SequentialLR, optim.SequentialScheduler) and optim.WeightDecayScheduler.param_group_key \
        == "weight_decay"
    p = torch.nn.Parameter(torch.zeros(2))
    opt = optim.SGD([{"params": [p], "adjust_learning_rate": 0.5}], lr=1.0)
    sched = optim.ScalePerParamLR(opt, optim.LinearLR(opt, initial_learning_rate=1.0, end_learning_rate=0.0,
                                                      total_iters=4))
    assert sched.get_last_lr() == [0.5]
    sched.step()
    assert sched.get_last_lr() == [pytest.approx(0.375)]  # 0.75 x 0.5, not compounded
    wd = optim.ConstantWD(opt, val=0.01)
    assert opt.param_groups[0]["weight_decay"] == 0.01 and wd.state_dict()["last_epoch"] == 1
    with pytest.raises(CerebrasError, match="param_group_tags"):
        optim.ConstantLR(opt, learning_rate=0.1, param_group_tags="decoder")


def test_cluster_storage_and_sparsity_say_what_runs_here(tmp_path):
    ckpt = tmp_path / "c.mdl"
    ckpt.write_bytes(b"x")
    assert zoo2.StorageWriter.is_valid_path(ckpt) and not zoo2.S3Writer.is_valid_path(ckpt)
    assert zoo2.S3Writer.is_valid_path("s3://bucket/c.mdl")
    with pytest.raises(CerebrasError, match="Wafer-Scale Cluster"):
        zoo2.S3Writer("s3://bucket/c.mdl")
    with pytest.raises(CerebrasError, match="S3 storage"):
        zoo2.StorageDeleter.get("s3://bucket/c.mdl")
    zoo2.StorageDeleter.get(ckpt).delete()
    assert not ckpt.exists()
    link = tmp_path / "latest.log"
    zoo2.create_symlink(link, "a.log")
    zoo2.create_symlink(link, "b.log")
    assert link.readlink() == Path("b.log")
    client = zoo2.TelemetryClient(None, 10, 1.0)
    with client:
        client.push({"loss": 1.0}, labels={"step": "1"})
    assert client.pushed == [({"loss": 1.0}, {"step": "1"})]
    with pytest.raises(CerebrasError, match="sparsity"):
        zoo2.Static(sparsity=0.5)
    assert zoo2.get_level_name("verbose") == 15 and zoo2.get_level_name("INFO") == 20
    with pytest.raises(ValueError, match="invalid log level"):
        zoo2.get_level_name("loud")


def test_eval_harness_names_exist_only_beside_the_simulated_cerebras_pytorch():
    from accelkit.vendor import aliases

    if importlib.util.find_spec("lm_eval") is not None:
        pytest.skip("the real lm_eval is installed here")
    with aliases.installed():
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("lm_eval")
        importlib.import_module("cerebras.pytorch")
        lm = importlib.import_module("lm_eval.api.model").LM
        with pytest.raises(CerebrasError, match="pip install lm-eval"):
            lm()
        cstorch = sys.modules["cerebras.pytorch"]
        importlib.import_module("cerebras.pytorch.backend")
        assert callable(cstorch.backend)  # the sub-module of helpers does not hide the function
    assert "lm_eval" not in sys.modules and "cerebras.pytorch" not in sys.modules


def test_treespecs_replace_as_pytorch_24_did_only_during_a_run():
    from torch.utils._pytree import TreeSpec, tree_flatten, tree_unflatten

    from accelkit.vendor import torch_compat

    values, spec = tree_flatten((1, (2, 3)))
    if "_context" not in {f.name for f in dataclasses.fields(TreeSpec)}:
        pytest.skip("this PyTorch keeps torch 2.4's TreeSpec fields")
    with pytest.raises(TypeError):
        dataclasses.replace(spec, type=list)
    with torch_compat.installed():
        as_list = dataclasses.replace(spec, type=list)
        assert tree_unflatten(values, as_list) == [1, (2, 3)]
    with pytest.raises(TypeError):
        dataclasses.replace(spec, type=list)


def _zoo_tree(tmp_path: Path, trainer_module: str) -> Path:
    """A folder in the Model Zoo's layout (setup.py and requirements.txt at its root, the code five levels below)
    with one trainer module; the run.py that imports it, in a model's folder."""
    root = tmp_path / "modelzoo"
    pkg = root / "src" / "cerebras" / "modelzoo"
    (pkg / "trainer" / "callbacks").mkdir(parents=True)
    (pkg / "models" / "mnist").mkdir(parents=True)
    (root / "setup.py").write_text("from setuptools import setup\nsetup(name='cerebras_modelzoo')\n")
    (root / "requirements.txt").write_text("tabulate==0.9.0\nnot-a-package-here==1.2.3\n")
    (pkg / "trainer" / "callbacks" / "stats.py").write_text(trainer_module)
    run = pkg / "models" / "mnist" / "run.py"
    run.write_text("import sys, os\nsys.path.append(os.path.join(os.path.dirname(__file__), '../../trainer'))\n"
                   "import callbacks.stats\n")
    return run


@pytest.mark.parametrize("module", [
    "import not_a_package_here\n",
    # the Model Zoo's registry wraps a failed import of a model's data processor in its own ImportError
    "try:\n    import not_a_package_here\nexcept ImportError as e:\n"
    "    raise ImportError('Failed to import DataProcessor') from e\n"])
def test_a_package_the_zoo_needs_is_named_from_its_requirements_file_five_levels_up(module, tmp_path, monkeypatch,
                                                                                   capsys):
    from accelkit.vendor import run_script

    run = _zoo_tree(tmp_path, module)
    monkeypatch.chdir(run.parent)
    result = run_script(run, [])
    err = capsys.readouterr().err
    assert result.exit_code == 1
    assert "modelzoo/requirements.txt lists it (not-a-package-here==1.2.3)" in err
    assert "pip install 'not-a-package-here==1.2.3'" in err


def test_the_zoos_config_failing_on_a_later_pydantic_names_the_pin(tmp_path, monkeypatch, capsys):
    import importlib.metadata

    from accelkit.vendor import run_script

    if importlib.metadata.version("pydantic") == "2.8.2":
        pytest.skip("pydantic 2.8.2 is installed here")
    run = _zoo_tree(tmp_path, "import pydantic\nclass C(pydantic.BaseModel):\n    params: list\nC.model_validate({})\n")
    monkeypatch.chdir(run.parent)
    result = run_script(run, [])
    err = capsys.readouterr().err
    assert result.exit_code == 1
    assert "pins pydantic==2.8.2" in err and "pip install 'pydantic==2.8.2'" in err


def test_frozen_batch_norm_stand_in_equals_batch_norm_in_eval_and_cluster_spec_is_one_task():
    from accelkit.facades.cerebras import distributed
    from accelkit.vendor.vision_ops import FrozenBatchNorm2d

    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(4).eval()
    bn.running_mean.normal_()
    bn.running_var.uniform_(0.5, 2.0)
    bn.weight.data.normal_()
    bn.bias.data.normal_()
    frozen = FrozenBatchNorm2d(4)
    frozen.load_state_dict({k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"})
    x = torch.randn(2, 4, 5, 5)
    torch.testing.assert_close(frozen(x), bn(x))
    assert not list(frozen.parameters())  # frozen: buffers only
    task = distributed.TaskSpec(rank=0, local_rank=0, wse_id=0, node_name="this host")
    assert distributed.ClusterSpec([task], 0, 1, 1).task() is task
    with pytest.raises(ValueError, match="invalid cluster"):
        distributed.ClusterSpec([task], 1, 1, 1)


def test_earlier_2x_releases_schedules_optimizer_checks_and_metrics():
    from accelkit.facades.cerebras import appliance, metrics

    p = torch.nn.Parameter(torch.zeros(2))
    opt = optim.SGD([p], lr=1.0)
    seq = optim.configure_scheduler(opt, {"SequentialLR": {"schedulers": [
        {"LinearLR": {"initial_learning_rate": 0.0, "end_learning_rate": 1.0, "total_iters": 4}},
        {"ConstantLR": {"learning_rate": 0.5}}]}})
    rates = []
    for _ in range(6):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        seq.step()
    assert rates == pytest.approx([0.0, 0.25, 0.5, 0.75, 0.5, 0.5])  # milestones from total_iters
    with pytest.raises(CerebrasError, match="no schedule 'Cyclic'"):
        optim.configure_scheduler(opt, {"Cyclic": {}})
    cls, kwargs = optim.configure_optimizer_params("adamw", {"learning_rate": 0.01,
                                                             "optim_params": {"weight_decay": 0.1}})
    assert cls is optim.AdamW and kwargs == {"lr": 0.01, "weight_decay": 0.1}
    with pytest.raises(CerebrasError, match="SGD takes no betas"):
        optim.configure_optimizer_params("SGD", {"optim_params": {"betas": (0.9, 0.99)}})
    with pytest.raises(CerebrasError, match="no scheduler 'cyclic'"):
        optim.configure_scheduler_params({"scheduler": "Cyclic"})

    mean = metrics.MeanMetric(name="test/mean")
    mean(torch.tensor([1.0, 3.0]))
    assert float(mean(torch.tensor(8.0), weight=2.0)) == pytest.approx((1 + 3 + 16) / 4)
    f1 = metrics.FBetaScoreMetric(num_classes=3, average_type="macro", name="test/f1")
    labels, preds = torch.tensor([0, 0, 1, 2, 2]), torch.tensor([0, 1, 1, 2, 0])
    # per class: 0 -> p 1/2 r 1/2; 1 -> p 1/2 r 1; 2 -> p 1 r 1/2
    assert float(f1(labels=labels, predictions=preds)) == pytest.approx((0.5 + 2 / 3 + 2 / 3) / 3)
    micro = metrics.FBetaScoreMetric(num_classes=3, name="test/f1micro")
    assert float(micro(labels=labels, predictions=preds)) == pytest.approx(3 / 5)  # single-label: accuracy

    assert zoo2.map_sparsity_algorithm("static") is zoo2.Static
    with pytest.raises(CerebrasError, match="'rigl' is not simulated"):
        zoo2.map_sparsity_algorithm("rigl")
    assert zoo2.convert_byte_unit(2, "MB", src_unit="GB") == 2048
    args = appliance.DebugArgs()
    appliance.update_debug_args_from_keys(args, {"debug_usr.memory.limit": 5})
    assert args.debug_usr.memory.limit == 5


def test_torchvision_stand_in_answers_what_packages_subclass_and_names_what_it_lacks(tmp_path, monkeypatch, capsys):
    from accelkit.vendor import run_script

    script = tmp_path / "uses_vision.py"
    script.write_text(
        "import torchvision\n"
        "from torchvision.datasets.vision import VisionDataset\n"
        "from torchvision.datasets.utils import verify_str_arg\n"
        "class Mine(VisionDataset):\n"
        "    def __init__(self, root, split, transform=None):\n"
        "        super().__init__(root, transform=transform)\n"
        "        self.split = verify_str_arg(split, 'split', ('train', 'val'))\n"
        "    def __len__(self):\n"
        "        return 1\n"
        "class City(torchvision.datasets.Cityscapes):  # subclassed at import, as the Model Zoo's registry does\n"
        "    pass\n"
        "assert Mine('.', 'train', transform=str).transforms(1, 2) == ('1', 2)\n"
        "try:\n"
        "    Mine('.', 'test')\n"
        "except ValueError as e:\n"
        "    print('refused:', e)\n"
        "City('.')\n")
    monkeypatch.chdir(tmp_path)
    run = run_script(script, [], synthetic_data=True)
    captured = capsys.readouterr()
    assert "refused: Unknown value 'test' for argument split" in captured.out
    assert run.exit_code == 1 and "torchvision.datasets.Cityscapes is not stood in" in (run.error or "")
    assert "MNIST" in (run.error or "")  # names what is stood in

    (tmp_path / "lacks.py").write_text("import torchvision\nimport torchvision.prototype.models\n")
    run = run_script(tmp_path / "lacks.py", [], synthetic_data=True)
    assert run.exit_code == 1
    assert "torchvision.prototype is not part of accelkit's stand-in for torchvision" in (run.error or "")


def test_cszoo_console_script_gets_the_stand_ins_the_zoo_imports_at_start_up(tmp_path, monkeypatch, capsys):
    from accelkit.vendor import run_script

    cli = tmp_path / "src" / "cerebras" / "modelzoo" / "cli"
    cli.mkdir(parents=True)
    (cli / "main.py").write_text("def main():\n    import torchvision.transforms.transforms as t\n"
                                 "    print('zoo cli', t.Compose.__module__)\n    return 0\n")
    script = tmp_path / "bin" / "cszoo"  # as `pip install -e modelzoo` writes it
    script.parent.mkdir()
    script.write_text("import sys\nfrom cerebras.modelzoo.cli.main import main\n"
                      "if __name__ == '__main__':\n    sys.exit(main())\n")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.chdir(tmp_path)
    run = run_script(script, ["fit"], synthetic_data=True)
    out = capsys.readouterr().out
    assert run.exit_code == 0, run.error
    assert "zoo cli accelkit.data.images" in out  # the stand-in's Compose, not a ModuleNotFoundError


LM_SHAPED = '''
import json, sys
import torch
import cerebras.pytorch as cstorch
from cerebras.pytorch.lib import cerebras_pytorch_lib
from cerebras.pytorch.utils.data.sampler import pad_index
from cerebras.pytorch.utils.kernel import kernel_annotater
from cerebras.pytorch.utils.num_kv_groups import groups_annotater
from cerebras.pytorch.distributed import get_worker_state

kind = sys.argv[1]
backend = cstorch.backend(kind)
cstorch.amp.enable_mixed_precision(True)
cstorch.amp.set_half_dtype("bfloat16")

class Tokens(torch.utils.data.Dataset):  # a map-style dataset of token rows, as an HDF5 reader gives them
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.rows = torch.randint(0, 50, (10, 9), generator=g)
        self.sampler = cstorch.utils.data.DistributedSampler(self, shuffle=False, shard=True, batch_size=4,
                                                             drop_last=True)
    def __len__(self):
        return len(self.rows)
    def __getitem__(self, i):
        assert i != pad_index
        return {"input_ids": self.rows[i, :-1], "labels": self.rows[i, 1:]}

class Restartable(torch.utils.data.DataLoader):  # keeps its position as the zoo's restartable loaders do
    def state_dict(self):
        return {"samples_streamed": get_worker_state().samples_streamed}
    def load_state_dict(self, state_dict, strict=True):
        self.batch_sampler.set_state(state_dict["samples_streamed"])
    def aggregate_state_dict(self, worker_states):
        return {"samples_streamed": sum(s["samples_streamed"] for s in worker_states), "__version__": 1}
    def deaggregate_state_dict(self, state_dict, strict=True):
        return state_dict

class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        pol = cstorch.backends.csx.precision.optimization_level
        self.softmax_fp32 = not (pol == 2 or (pol == 1 and cstorch.amp.get_half_dtype_str() == "cbfloat16"))
        self.dtype = cstorch.amp.get_floating_point_dtype_str()
        self.emb = torch.nn.Embedding(50, 16)
        self.qk = torch.nn.Linear(16, 32)
        self.head = torch.nn.Linear(16, 50)
        self.using_kernel = kernel_annotater(None)
        self.using_groups = groups_annotater(None)
    def forward(self, ids):
        x = self.emb(ids)
        q, k = self.qk(x).chunk(2, dim=-1)
        att = self.using_groups(self.using_kernel(torch.matmul))(q, k.transpose(-1, -2)).softmax(-1)
        x = x + att @ x
        cerebras_pytorch_lib.set_attribute(x, "cs.internal", {"source_vars": ["decoder_out"]})
        if cstorch.use_cs() and cstorch.backends.csx.precision.optimization_level == 1:
            return cstorch.pol(bwd_level=0)(self.head)(x)
        return self.head(x)

torch.manual_seed(0)
model = TinyLM()
compiled = cstorch.compile(model, backend)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.1)
dataset = Tokens()
loader = cstorch.utils.data.DataLoader(lambda: Restartable(dataset, batch_sampler=dataset.sampler))

@cstorch.trace
def step(batch):
    logits = compiled(batch["input_ids"])
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), batch["labels"].flatten())
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss

losses = [float(step(batch).detach()) for batch in cstorch.utils.data.DataExecutor(loader, num_steps=3)]
state = loader.state_dict()
loader.load_state_dict({"samples_streamed": 4, "__version__": 1})
first = next(iter(loader))["input_ids"]
json.dump({"losses": losses, "state": state, "pol": cstorch.current_pol(), "softmax_fp32": model.softmax_fp32,
           "dtype": model.dtype, "restarted_at_row_4": bool(torch.equal(first[0], dataset.rows[4, :-1])),
           "worker_state_after": get_worker_state()}, open("result.json", "w"))
'''


@pytest.mark.parametrize("kind", ["CPU", "CSX"])
def test_language_model_shaped_script_reads_precision_hints_and_keeps_its_loaders_position(kind, tmp_path,
                                                                                          monkeypatch, capsys):
    """What the 2.10 Model Zoo's GPT-2 / Llama path reads: the POL and half dtype's name when the model is built,
    the compiler hints on its attention and LM head, an HDF5-style map dataset batched by cstorch's
    DistributedSampler, and the loader's state at a checkpoint (samples streamed, from get_worker_state)."""
    from accelkit.vendor import run_script

    (tmp_path / "lm_shaped.py").write_text(LM_SHAPED)
    monkeypatch.chdir(tmp_path)
    run = run_script(tmp_path / "lm_shaped.py", [kind])
    out = capsys.readouterr().out
    assert run.exit_code == 0, f"{run.error}\n{out}"
    result = json.loads((tmp_path / "result.json").read_text())
    assert len(result["losses"]) == 3 and all(loss == loss for loss in result["losses"])
    # 10 rows in batches of 4, the last short one dropped: 2 per pass, so 3 steps stream 12 samples
    assert result["state"] == {"samples_streamed": 12, "__version__": 1}
    assert result["restarted_at_row_4"] and result["worker_state_after"] is None
    assert result["pol"] == 1 and result["softmax_fp32"] and result["dtype"] == "bfloat16"
    assert "cerebras_pytorch_lib.set_attribute" in out
    if kind == "CSX":
        assert "cstorch.pol(level=None, bwd_level=0)" in out  # the LM head's hint, recorded


def test_distributed_sampler_batches_pads_repeats_and_restarts():
    data = list(range(10))
    s = zoo2.DistributedSampler(data, shuffle=False, batch_size=4)
    assert list(s) == [[0, 1, 2, 3], [4, 5, 6, 7]] and len(s) == 2  # drop_last by default
    s = zoo2.DistributedSampler(data, shuffle=False, batch_size=4, drop_last=False, pad_last=True)
    assert list(s)[-1] == [8, 9, zoo2.pad_index, zoo2.pad_index] and len(s) == 3
    s = zoo2.DistributedSampler(data, shuffle=False, batch_size=4, num_samples=16)
    assert list(s)[-1] == [2, 3, 4, 5]  # the data repeated to 16 samples
    s = zoo2.DistributedSampler(data, shuffle=True, seed=3)
    first, second = list(s), list(s)
    assert sorted(first) == data and first != second  # each pass reshuffled...
    assert list(zoo2.DistributedSampler(data, shuffle=True, seed=3)) == first  # ...from the seed
    s = zoo2.DistributedSampler(data, shuffle=False, batch_size=2)
    s.set_state(6)
    assert list(s) == [[6, 7], [8, 9]] and list(s)[0] == [0, 1]  # a set state applies to one pass
    with pytest.raises(CerebrasError, match="dropped or padded"):
        zoo2.DistributedSampler(data, batch_size=4, pad_last=True)
    with pytest.raises(CerebrasError, match="batch_size"):
        zoo2.DistributedSampler(data, batch_size=0)


def test_precision_level_pol_scopes_and_the_loaders_state_say_what_they_can_do():
    from accelkit.facades.cerebras import amp, cstorch, distributed

    precision = cstorch.backends.csx.precision
    assert precision.optimization_level == 1 and zoo2.current_pol() == 1  # cstorch's default
    try:
        precision.optimization_level = 2
        assert zoo2.current_pol() == 2
        with zoo2.pol(level=0):
            assert zoo2.current_pol() == 0
        assert zoo2.pol(bwd_level=0)(lambda x: x + 1)(1) == 2 and zoo2.current_pol() == 2
        with pytest.raises(CerebrasError, match="0, 1 or 2"):
            precision.optimization_level = 3
        with pytest.raises(CerebrasError, match="not a cstorch precision setting"):
            precision.level = 1
        with pytest.raises(CerebrasError, match="0, 1 or 2"):
            zoo2.pol(bwd_level=5)
    finally:
        precision.optimization_level = 1
    assert amp.get_floating_point_dtype_str() in ("float32", "float16", "bfloat16")
    assert zoo2.kernel_annotater("MMA")(torch.matmul) is torch.matmul  # a hint: the op itself comes back
    with pytest.raises(CerebrasError, match="compiled code"):
        zoo2.cerebras_pytorch_lib.get_appliance()
    loader = cstorch.DataLoader(lambda: [torch.zeros(2, 3)])
    assert [b.shape[0] for b in loader] == [2] and loader.samples_streamed == 2
    with pytest.raises(CerebrasError, match="keeps no position"):
        loader.state_dict()
    assert distributed.get_worker_state() is None


SCOPED_FLAGS_SHAPED = '''
import json, sys
import torch
import cerebras.pytorch as cstorch

MISSING = object()

def lookup(flag):  # "csx.performance.micro_batch_size" under cstorch.backends, as a config's callback names it
    scope, attr = flag.rsplit(".", 1)
    node = cstorch.backends
    for part in scope.split("."):
        node = getattr(node, part)
    return node, attr

class ScopedFlags:  # sets the flags for one loop and puts back what was there before
    def __init__(self, **flags):
        self.flags, self.saved = flags, {}
    def __enter__(self):
        for flag, value in self.flags.items():
            node, attr = lookup(flag)
            self.saved[flag] = getattr(node, attr, MISSING)
            setattr(node, attr, value)
    def __exit__(self, *exc):
        for flag, value in self.saved.items():
            node, attr = lookup(flag)
            if value is MISSING:
                delattr(node, attr)
            else:
                setattr(node, attr, value)

backend = cstorch.backend(sys.argv[1])
torch.manual_seed(0)
model = torch.nn.Linear(4, 2)
compiled = cstorch.compile(model, backend)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.1)

@cstorch.trace
def step(x):
    loss = compiled(x).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss

perf = cstorch.backends.csx.performance
seen = {"before": getattr(perf, "micro_batch_size", "unset")}
with ScopedFlags(**{"csx.performance.micro_batch_size": 2, "csx.performance.transfer_processes": 4}):
    seen["during"] = [perf.micro_batch_size, perf.transfer_processes]
    losses = [float(step(torch.randn(4, 4)).detach()) for _ in range(2)]
seen["after"] = getattr(perf, "micro_batch_size", "unset")
try:
    perf.micro_batch = 2
except cstorch.CerebrasError as e:
    seen["refused"] = str(e)
json.dump({"losses": losses, **seen}, open("result.json", "w"))
'''


@pytest.mark.parametrize("kind", ["CPU", "CSX"])
def test_scoped_performance_flags_are_set_read_back_recorded_and_removed(kind, tmp_path, monkeypatch, capsys):
    """The 2.x Model Zoo's configs set ``csx.performance.micro_batch_size`` for a loop (``ScopedTrainFlags`` /
    ``ScopedValidateFlags`` callbacks, the ViT config's): read with a default, set, then deleted after the loop."""
    from accelkit.vendor import run_script

    (tmp_path / "scoped_flags.py").write_text(SCOPED_FLAGS_SHAPED)
    monkeypatch.chdir(tmp_path)
    run = run_script(tmp_path / "scoped_flags.py", [kind])
    out = capsys.readouterr().out
    assert run.exit_code == 0, f"{run.error}\n{out}"
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["before"] == "unset" and result["after"] == "unset"  # removed again after the loop
    assert result["during"] == [2, 4] and len(result["losses"]) == 2
    assert "not a cstorch performance setting" in result["refused"]
    assert "cstorch.backends.csx.performance.micro_batch_size = 2 accepted" in out
    assert "the simulated step computes the whole batch" in out


def test_cbfloat16_runs_as_bfloat16_as_the_model_zoo_runs_it_off_the_system(tmp_path, monkeypatch):
    """The 2.10 Model Zoo's shipped configs (ESM-2, ViT, BERT) ask for cbfloat16; on CSX the zoo passes it to
    ``cstorch.amp.set_half_dtype``. Cerebras' 16-bit format has no CPU kernels, so it runs as bfloat16, as the zoo's
    own runs off the system do, and the run says so."""
    from accelkit.vendor import run_script

    script = tmp_path / "half.py"
    script.write_text("import torch\nimport cerebras.pytorch as cstorch\n"
                      "print('dtype', cstorch.amp.set_half_dtype('cbfloat16'), cstorch.amp.get_half_dtype_str())\n")
    monkeypatch.chdir(tmp_path)
    run = run_script(script, [], synthetic_data=True, quiet=True)
    out = (run.output or "") + (run.error or "")
    assert run.exit_code == 0, out
    assert "dtype torch.bfloat16 bfloat16" in out
    said = [a for a in run.accepted if "set_half_dtype('cbfloat16')" in a]
    assert said and "runs as bfloat16" in said[0] and "9 mantissa bits" in said[0]


JOB_LABELLED = '''
import sys
import cerebras.pytorch as cstorch
import torch

# ALCF's commands add `--job_labels name=gptj` to `cszoo fit`: the runner puts the CLI's cluster settings into
# the config's trainer.init.backend.cluster_config and builds the ClusterConfig from that dict.
backend_params = {"backend_type": "CSX", "cluster_config": {"num_csx": 1, "job_labels": ["name=gptj"],
                                                            "job_priority": "p2", "cbcore_image": None,
                                                            "mount_dirs": ["/home/", "/software"]}}
cluster_config = cstorch.distributed.ClusterConfig(**backend_params.pop("cluster_config"))
assert cluster_config.job_labels == ["name=gptj"] and cluster_config.job_priority == "p2"
backend = cstorch.backend(backend_params["backend_type"], cluster_config=cluster_config)
model = torch.nn.Linear(4, 2)
compiled = cstorch.compile(model, backend)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.1)

@cstorch.trace
def step(x):
    loss = compiled(x).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss

print("loss", step(torch.ones(8, 4)).item())
'''


def test_cluster_config_takes_the_job_labels_alcfs_cszoo_commands_pass(tmp_path, monkeypatch, capsys):
    from accelkit.vendor import run_script

    (tmp_path / "job_labelled.py").write_text(JOB_LABELLED)
    monkeypatch.chdir(tmp_path)
    run = run_script(tmp_path / "job_labelled.py", [])
    out = capsys.readouterr().out
    assert run.exit_code == 0, f"{run.error}\n{out}"
    assert "loss " in out
    recorded = next(line for line in out.splitlines() if "cstorch.backend(cluster_config=" in line)
    assert "job_labels=['name=gptj']" in recorded and "job_priority='p2'" in recorded
    assert "accepted, not simulated" in recorded


MOE_SHAPED = '''
import json, sys
import torch
import cerebras.pytorch as cstorch
import cerebras.pytorch.nn.functional as F
from cerebras.pytorch.distributed.cluster_resolver import ClusterSpec, TaskSpec
from cerebras.pytorch.metrics import FBetaScoreMetric

kind = sys.argv[1]
backend = cstorch.backend(kind)
cstorch.amp.enable_mixed_precision(True)
cstorch.amp.set_half_dtype("bfloat16")
logged = []

@cstorch.step_closure
def log_later(name, value):  # a logger that defers what it reads to the host, as a trainer does while tracing
    logged.append((name, float(value)))

def log(name, value):
    if backend.is_tracing:
        log_later(name, value)
    else:
        logged.append((name, float(value)))

class TinyMoE(torch.nn.Module):  # two experts, one chosen per token, and a token-masked expert beside them
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(20, 8)
        self.gate = torch.nn.Linear(8, 2, bias=False)
        self.experts = torch.nn.Parameter(torch.randn(8, 2, 8) * 0.3)  # (out, experts, in)
        self.masked = torch.nn.Parameter(torch.randn(8, 8) * 0.3)
        self.head = torch.nn.Linear(8, 3)
        self.f1 = FBetaScoreMetric(num_classes=3, average_type="macro", ignore_labels=[2], name="eval/f1")
    def forward(self, ids, labels=None):
        x = self.emb(ids)
        if cstorch.use_cs():  # the router's input in the half dtype on the system
            x = x.to(cstorch.amp.get_half_dtype())
        probs = self.gate(x).float().softmax(-1)
        top, idx = probs.topk(1, dim=-1)
        y = (F.sparse_matmul(x, idx, self.experts) * top[..., None].to(x.dtype)).sum(-2)
        y = y + F.sparse_act_matmul(x, (idx[..., 0] == 0).to(torch.int16), self.masked, 4)
        log("router/top_prob", top.mean())
        logits = self.head(y.float()).mean(1)
        if not self.training and labels is not None:  # the model scores itself, as the zoo's heads do
            self.f1(labels=labels, predictions=logits.argmax(-1).int())
        return logits

torch.manual_seed(0)
model = TinyMoE()
compiled = cstorch.compile(model, backend)
optimizer = cstorch.optim.Adafactor(model.parameters(), lr=0.0)
schedule = cstorch.optim.lr_scheduler.InverseSquareRootDecayLR(optimizer, scale=0.1, warmup_steps=2)
g = torch.Generator().manual_seed(1)
ids, labels = torch.randint(0, 20, (8, 6), generator=g), torch.randint(0, 3, (8,), generator=g)

@cstorch.trace
def train_step(ids, labels):
    loss = torch.nn.functional.cross_entropy(compiled(ids), labels)
    loss.backward()
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()
    return loss

@cstorch.trace
@torch.no_grad()
def eval_step(ids, labels):
    return compiled(ids, labels)

losses, rates = [], []
for _ in range(4):
    losses.append(float(train_step(ids, labels)))
    rates.append(optimizer.param_groups[0]["lr"])
model.eval()
eval_step(ids, labels)
cluster = ClusterSpec([TaskSpec(rank=0, local_rank=0, wse_id=0, node_name="localhost")], rank=0, num_csx=1,
                      num_workers_per_csx=1)
json.dump({"losses": losses, "rates": rates, "logged": logged, "f1": float(model.f1), "num_tasks": cluster.num_tasks(),
           "factored": sorted(optimizer.state[model.experts])}, open("result.json", "w"))
'''


@pytest.mark.parametrize("kind", ["CPU", "CSX"])
def test_mixture_of_experts_shaped_script_trains_with_adafactor_and_scores_inside_the_compiled_step(
        kind, tmp_path, monkeypatch, capsys):
    """What the 2.10 Model Zoo's T5 and Mixtral configs and BERT fine-tuning heads read: Adafactor with the inverse
    square-root schedule, the experts' sparse products, a value logged from inside the model (deferred to a step
    closure while the step's program is captured on the CS-2, where the values do not exist: logged once a step),
    an F-score updated inside the compiled eval step, and the cluster's task count."""
    from accelkit.vendor import run_script

    (tmp_path / "moe_shaped.py").write_text(MOE_SHAPED)
    monkeypatch.chdir(tmp_path)
    run = run_script(tmp_path / "moe_shaped.py", [kind])
    out = capsys.readouterr().out
    assert run.exit_code == 0, f"{run.error}\n{out}"
    result = json.loads((tmp_path / "result.json").read_text())
    assert all(loss == loss for loss in result["losses"]) and result["losses"][-1] < result["losses"][0]
    # 0.1 / sqrt(max(step, 2)) after steps 1..4: constant through the warm-up, then the inverse square root
    assert result["rates"] == pytest.approx([0.1 / 2 ** 0.5, 0.1 / 2 ** 0.5, 0.1 / 3 ** 0.5, 0.1 / 2])
    assert [name for name, _ in result["logged"]] == ["router/top_prob"] * 5  # 4 train steps, 1 eval step
    assert 0.0 <= result["f1"] <= 1.0 and result["num_tasks"] == 1
    assert result["factored"] == ["exp_avg_sq_col", "exp_avg_sq_row", "step"]
    if kind == "CSX":
        assert "sparse_act_matmul(dense_capacity=4)" in out


def test_adafactor_and_the_experts_products_compute_what_they_say():
    from accelkit.facades.cerebras import zoo2

    p = torch.nn.Parameter(torch.tensor([0.5, -2.0, 1.0]))
    opt = optim.Adafactor([p], lr=0.1)
    p.grad = torch.tensor([0.3, -0.2, 0.0])
    start = p.detach().clone()
    opt.step()
    # first step: the second moment is the squared gradient, so the update is the gradient's sign; the rate is
    # relative to the parameter's RMS
    rms = start.square().mean().sqrt()
    assert torch.allclose(p.detach(), start - 0.1 * rms * torch.tensor([1.0, -1.0, 0.0]), atol=1e-5)
    with pytest.raises(CerebrasError, match="relative_step"):
        optim.Adafactor([p], lr=0.1, relative_step=True)
    assert optim.configure_optimizer("Adafactor", [p], learning_rate=0.01).param_groups[0]["lr"] == 0.01

    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(2, 3, 4, generator=g), torch.randn(5, 3, 4, generator=g)  # 3 experts, 4 -> 5
    idx = torch.tensor([[[0, 2], [1, 1], [2, 0]], [[1, 0], [0, 1], [2, 2]]])
    out = zoo2.sparse_matmul(x, idx, w)
    expect = torch.stack([torch.stack([torch.stack([w[:, int(e)] @ x[b, s] for e in idx[b, s]])
                                       for s in range(3)]) for b in range(2)])
    assert out.shape == (2, 3, 2, 5) and torch.allclose(out, expect, atol=1e-5)
    mask = torch.tensor([[1, 0, 1], [0, 0, 1]], dtype=torch.int16)
    dense = zoo2.sparse_act_matmul(x, mask, w[:, 0])
    assert torch.allclose(dense, (x @ w[:, 0].T) * mask[..., None], atol=1e-5)


HALF_CAST_SHAPED = '''
import json, sys
import torch
import cerebras.pytorch as cstorch

backend = cstorch.backend(sys.argv[1])
cstorch.amp.enable_mixed_precision(True)
cstorch.amp.set_half_dtype("bfloat16")
seen = []

class TinyDiT(torch.nn.Module):  # noises its latent and casts it to the half dtype before an fp32 Conv2d
    def __init__(self):
        super().__init__()
        self.patch = torch.nn.Conv2d(4, 8, 2, stride=2)
        self.head = torch.nn.Linear(8, 4 * 4)
    def forward(self, latent, noise):
        noised = (0.9 * latent + 0.1 * noise).to(cstorch.amp.get_half_dtype())
        seen.append(str(noised.dtype))
        h = self.patch(noised).flatten(2).mean(-1)
        return torch.nn.functional.mse_loss(self.head(h).float(), noise.flatten(1)[:, :16])

torch.manual_seed(0)
model = TinyDiT()
compiled = cstorch.compile(model, backend)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.1)

@cstorch.trace
def train_step(latent, noise):
    loss = compiled(latent, noise)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss

g = torch.Generator().manual_seed(1)
latent, noise = torch.randn(2, 4, 4, 4, generator=g), torch.randn(2, 4, 4, 4, generator=g)
losses = [float(train_step(latent, noise)) for _ in range(3)]
json.dump({"losses": losses, "seen": sorted(set(seen)), "after": str(cstorch.amp.get_half_dtype())},
          open("result.json", "w"))
'''


def test_a_models_own_cast_to_the_half_dtype_runs_and_is_captured_as_the_fp32_program(tmp_path, monkeypatch, capsys):
    """The 2.10 Model Zoo's DiT casts its noised latent to ``cstorch.amp.get_half_dtype()`` before its fp32
    patch-embedding ``Conv2d``: the step runs it in the half dtype (mixed precision), and the CSX step's program,
    captured as the fp32 model's, gets ``torch.float32`` there instead of a mixed-dtype convolution."""
    from accelkit.vendor import run_script

    (tmp_path / "half_cast.py").write_text(HALF_CAST_SHAPED)
    monkeypatch.chdir(tmp_path)
    run = run_script(tmp_path / "half_cast.py", ["CSX"])
    out = capsys.readouterr().out
    assert run.exit_code == 0, f"{run.error}\n{out}"
    result = json.loads((tmp_path / "result.json").read_text())
    assert all(loss == loss for loss in result["losses"]) and result["losses"][-1] < result["losses"][0]
    assert result["after"] == "torch.bfloat16"
    assert result["seen"] == ["torch.bfloat16", "torch.float32"]  # the step's, the captured program's


SSL_SHAPED = '''
import json, math
import torch
import cerebras.pytorch as cstorch
from cerebras.pytorch.nn import SmoothL1Loss

backend = cstorch.backend("CSX")
torch.manual_seed(0)
model = torch.nn.Linear(4, 4)
compiled = cstorch.compile(model, backend)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.1)
schedule = cstorch.optim.lr_scheduler.CosineAnnealingLR(optimizer, initial_learning_rate=0.1, T_max=4, eta_min=0.02)
masked = SmoothL1Loss(reduction="none", beta=0.5)  # the zoo's MaskedSmoothL1Loss: per element, then masked

@cstorch.trace
def train_step(x, y, mask):
    total = torch.tensor(0.0).to(cstorch.current_torch_device())  # the SSL trunk's loss accumulator
    total = total + (masked(compiled(x), y) * mask).sum() / mask.sum()
    total.backward()
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()
    return total

g = torch.Generator().manual_seed(1)
x, y = torch.randn(8, 4, generator=g), torch.randn(8, 4, generator=g)
mask = (torch.rand(8, 1, generator=g) > 0.3).float()
losses, rates = [], []
for _ in range(6):
    rates.append(optimizer.param_groups[0]["lr"])
    losses.append(float(train_step(x, y, mask)))
d = torch.tensor([[0.1, -0.4, 2.0]])
json.dump({"losses": losses, "rates": rates, "device": str(cstorch.current_torch_device()),
           "values": masked(d, torch.zeros_like(d)).tolist()[0]}, open("result.json", "w"))
'''


def test_self_supervised_image_encoders_reads_smooth_l1_the_torch_device_and_cosine_annealing(tmp_path, monkeypatch,
                                                                                          capsys):
    """What the 2.10 Model Zoo's DINOv2 configs read: ``cstorch.nn.SmoothL1Loss`` (imported by the image encoders'
    losses), ``cstorch.current_torch_device()`` (where the trunk puts its loss accumulator; this CPU) and the
    linear probe's ``CosineAnnealingLR`` (PyTorch's closed form, down to ``eta_min`` at ``T_max`` and back up)."""
    from accelkit.vendor import run_script

    (tmp_path / "ssl_shaped.py").write_text(SSL_SHAPED)
    monkeypatch.chdir(tmp_path)
    run = run_script(tmp_path / "ssl_shaped.py", [])
    out = capsys.readouterr().out
    assert run.exit_code == 0, f"{run.error}\n{out}"
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["device"] == "cpu"
    assert all(loss == loss for loss in result["losses"]) and result["losses"][-1] < result["losses"][0]
    # 0.5 * d^2 / beta below beta, |d| - beta / 2 above it
    assert result["values"] == pytest.approx([0.5 * 0.01 / 0.5, 0.5 * 0.16 / 0.5, 2.0 - 0.25])
    expect = [0.02 + 0.08 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(6)]
    assert result["rates"] == pytest.approx(expect)
    assert result["rates"][4] == pytest.approx(0.02) and result["rates"][5] > result["rates"][4]


def test_torchvision_stand_in_jitters_greys_and_solarizes_as_the_zoos_dino_crops_ask(tmp_path, monkeypatch, capsys):
    """The Model Zoo's DINOv2 multi-crop transforms ask torchvision (not installed here) for ``ColorJitter``,
    ``RandomGrayscale`` and ``RandomSolarize``: the stand-in applies them to PIL images as torchvision does."""
    from accelkit.vendor import run_script

    script = tmp_path / "crops.py"
    script.write_text(
        "import json\n"
        "import numpy as np, torch\n"
        "from PIL import Image\n"
        "from torchvision import transforms\n"
        "torch.manual_seed(0)\n"
        "img = Image.fromarray(np.arange(4 * 4 * 3, dtype=np.uint8).reshape(4, 4, 3) * 5)\n"
        "a = np.asarray(img).astype(int)\n"
        "grey = np.asarray(transforms.RandomGrayscale(p=1.0)(img)).astype(int)\n"
        "sol = np.asarray(transforms.RandomSolarize(threshold=128, p=1.0)(img)).astype(int)\n"
        "same = transforms.RandomSolarize(threshold=128, p=0.0)(img) is img\n"
        "dim = np.asarray(transforms.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1)(img))\n"
        "ident = np.asarray(transforms.ColorJitter()(img)).astype(int)\n"
        "json.dump({'grey_mode': transforms.RandomGrayscale(p=1.0)(img).mode,\n"
        "           'grey_equal': bool((grey[..., 0] == grey[..., 1]).all() and (grey[..., 1] == grey[..., 2]).all()),\n"
        "           'sol': bool((sol == np.where(a >= 128, 255 - a, a)).all()), 'same': same,\n"
        "           'jitter_shape': list(dim.shape), 'jitter_changed': bool((dim.astype(int) != a).any()),\n"
        "           'ident': bool((ident == a).all())}, open('result.json', 'w'))\n")
    monkeypatch.chdir(tmp_path)
    run = run_script(script, [], synthetic_data=True)
    out = capsys.readouterr().out
    assert run.exit_code == 0, f"{run.error}\n{out}"
    result = json.loads((tmp_path / "result.json").read_text())
    assert result == {"grey_mode": "RGB", "grey_equal": True, "sol": True, "same": True, "jitter_shape": [4, 4, 3],
                      "jitter_changed": True, "ident": True}
