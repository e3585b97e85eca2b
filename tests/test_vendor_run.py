"""``accelkit vendor-run``: programs written for the vendors' SDKs, in the shape of their first tutorials
(examples/vendor/, nothing in them names accelkit), run unchanged. Each runs to the end, its loss falls, and the
launcher prints the modelled time and report. Also: the vendor names never shadow a real SDK, an error inside a
vendor call names the call and the fix.

One script per vendor runs as its README documents it, ``accelkit vendor-run ...`` in a fresh interpreter
(:func:`vendor_run`); the others run in this process through the launcher's Python entry point
:func:`accelkit.vendor.run_script`, which the command calls (:func:`in_process`): the same import hook, stand-ins
and report, without an interpreter start and a fresh import of torch for each."""

from __future__ import annotations

import importlib.util
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

from accelkit.errors import AccelkitError

SCRIPTS = Path(__file__).parents[1] / "examples" / "vendor"
LOSSES = re.compile(r"first loss (\d+\.\d+) last loss (\d+\.\d+)")


def vendor_run(tmp_path: Path, script: str, *args: str, synthetic: bool = True,
               ok: bool = True) -> subprocess.CompletedProcess[str]:
    """Copy ``script`` into ``tmp_path`` (apps write their PEFs beside themselves) and launch it as its README
    says, ``accelkit vendor-run [--synthetic-data] script [args]``, in a fresh interpreter."""
    if not (tmp_path / script).is_file():
        shutil.copy(SCRIPTS / script, tmp_path / script)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GROQFLOW_CACHE_DIR": str(tmp_path / "groqflow-cache")}
    cmd = [sys.executable, "-m", "accelkit.cli", "vendor-run", *(["--synthetic-data"] if synthetic else []), script,
           *args]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    if ok:
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"
    return proc


def in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], script: str,
               *args: str, synthetic: bool = True, stderr: bool = False) -> str:
    """Copy ``script`` into ``tmp_path`` and run it there through :func:`accelkit.vendor.run_script`, as
    `accelkit vendor-run` does; its stdout (then its stderr, with ``stderr=True``)."""
    from accelkit.vendor import run_script

    if not (tmp_path / script).is_file():
        shutil.copy(SCRIPTS / script, tmp_path / script)
    monkeypatch.chdir(tmp_path)
    run = run_script(tmp_path / script, args, synthetic_data=synthetic)
    captured = capsys.readouterr()
    out = captured.out + (captured.err if stderr else "")
    assert run.exit_code == 0, f"{script}: {run.error}\n{out}"
    return out


def falls(out: str) -> tuple[float, float]:
    m = LOSSES.search(out)
    assert m, out
    first, last = float(m.group(1)), float(m.group(2))
    assert last < 0.8 * first, out
    return first, last


# ---- SambaNova SambaFlow --------------------------------------------------------------------------
def test_sambaflow_logreg_compiles_then_trains_on_mnist(tmp_path, monkeypatch, capsys):
    out = vendor_run(tmp_path, "samba_logreg.py", "compile", "-b", "32", "-p", "out/logreg/logreg.pef").stdout
    assert "compiled 'logreg'" in out and (tmp_path / "out/logreg/logreg.pef/manifest.json").is_file()
    assert "sambaflow.samba.utils.argparser" in out  # answered by accelkit, for this run only
    out = in_process(tmp_path, monkeypatch, capsys, "samba_logreg.py", "run", "-b", "32",
                     "--pef=out/logreg/logreg.pef", "--num-steps", "40", "--log-level=error")
    falls(out)
    assert "Test Accuracy" in out
    assert "SambaFlow app on out/logreg/logreg.pef" in out and "MODELLED on sn40l" in out
    assert "40 steps" in out
    assert "torchvision.datasets.MNIST" in out and "nothing downloaded" in out
    log = re.search(r"\]: sn_create_session: PEF File: out/logreg/logreg.pef\nLog ID initialized to: .* at (.+)\n", out)
    assert log and "simulated" in Path(log.group(1)).read_text()  # the runtime's lines name a log that exists
    assert "[info    ]" not in out  # --log-level=error keeps SambaFlow's info lines quiet, as on the real machine


# ---- Cerebras -------------------------------------------------------------------------------------
def test_cbtorch_seed_session_with_model_optimizer_criterion_trains_then_evaluates(tmp_path, monkeypatch, capsys):
    out = in_process(tmp_path, monkeypatch, capsys, "cbtorch_seed.py", synthetic=False)
    falls(out)
    assert "cerebras.framework.torch" in out
    train, evaluate = out.split("cbtorch.Session (mode='train')")[1].split("cbtorch.Session (mode='eval')")
    assert "MODELLED on wse2" in train and "32 steps" in train and "opt" in train  # each optimizer.step(): a step
    assert "16 steps" in evaluate and "bckwd" not in evaluate  # each forward under mode='eval': a step
    assert "execution mode on the CS-2" in out


def test_cstorch_loop_traces_steps_checkpoints_takes_int32_labels_and_names_the_fix_of_an_error(tmp_path, monkeypatch,
                                                                                                 capsys):
    out = in_process(tmp_path, monkeypatch, capsys, "cstorch_loop.py", synthetic=False)
    losses = falls(out)
    assert "checkpoint_25.mdl', 'checkpoints/checkpoint_50.mdl', 'checkpoints/checkpoint_60.mdl']" in out
    assert "last holds step 60" in out and "60 steps" in out and "MODELLED on wse2" in out
    assert "cstorch.backend(compile_dir='/tmp/compile_dir') accepted, not simulated" in out
    assert list((tmp_path / "cerebras_artifacts").glob("*.akp"))  # the compiled program, in artifact_dir
    # int32 labels, as Cerebras' pipelines make them: the system's loss takes them, so the CSX step does too
    # (widened to int64 on this CPU: the same values, so the very same losses)
    out = in_process(tmp_path, monkeypatch, capsys, "cstorch_loop.py", "--int32-labels", synthetic=False)
    assert falls(out) == losses

    # an error inside the traced step, from the command line: the call, the script's own line and the fix
    text = (SCRIPTS / "cstorch_loop.py").read_text()
    (tmp_path / "cstorch_loop_narrow.py").write_text(text.replace("nn.Linear(16, 64)", "nn.Linear(12, 64)"))
    proc = vendor_run(tmp_path, "cstorch_loop_narrow.py", synthetic=False, ok=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr  # the call, the line and the fix; not PyTorch's traceback
    assert "the @cstorch.trace step training_step() failed" in proc.stderr
    line = text.splitlines().index("        return self.net(x)") + 1
    assert f"cstorch_loop_narrow.py:{line}: return self.net(x)" in proc.stderr  # the script's own line
    assert "flatten images before a Linear layer" in proc.stderr


# ---- Graphcore PopTorch ---------------------------------------------------------------------------
def test_poptorch_basics_trains_then_infers_with_output_mode_all(tmp_path, monkeypatch, capsys):
    out = in_process(tmp_path, monkeypatch, capsys, "poptorch_basics.py")
    falls(out)
    assert float(re.search(r"accuracy (\d+\.\d+)%", out).group(1)) > 80
    assert "trainingModel(ClassificationModel on 1 x gc200)" in out and "MODELLED on gc200" in out
    assert "inferenceModel(ClassificationModel" in out
    assert "FashionMNIST" in out


def test_poptorch_mixed_precision_honours_loss_scaling_and_fp32_accumulators(tmp_path, monkeypatch, capsys):
    out = in_process(tmp_path, monkeypatch, capsys, "poptorch_mixed_precision.py")
    falls(out)  # the script also asserts no loss is NaN
    assert "(mode 'on-chip', fp16)" in out
    assert "enableStochasticRounding" not in out  # honoured (fp16 stores round stochastically), not just noted
    assert "DataLoader(mode=<DataLoaderMode.Async: 1>) accepted" in out


def test_poptorch_bert_pipeline_from_pretrained_with_keyword_calls(tmp_path, monkeypatch, capsys):
    pytest.importorskip("transformers")
    out = in_process(tmp_path, monkeypatch, capsys, "poptorch_bert.py")
    falls(out)
    assert "pipeline over 2 IPUs" in out and "2 x gc200" in out
    assert "from_pretrained('bert-base-uncased') builds Bert" in out and "RANDOM weights" in out
    assert "setAvailableMemoryProportion" in out


def test_poptorch_optim_loss_scaling_is_exact_in_fp32_and_keeps_fp32_state_for_fp16_weights():
    import torch
    from torch import nn

    import accelkit.facades.poptorch as poptorch

    torch.manual_seed(0)
    x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    ref = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    ref.load_state_dict(model.state_dict())

    class WithLoss(nn.Module):
        def __init__(self, body):
            super().__init__()
            self.body = body

        def forward(self, x, labels):
            out = self.body(x)
            return out, nn.functional.cross_entropy(out, labels)

    train = poptorch.trainingModel(WithLoss(model), optimizer=poptorch.optim.SGD(model.parameters(), lr=0.1,
                                                                                  loss_scaling=128.0))
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(3):
        _, loss = train(x, y)
        ref_loss = nn.functional.cross_entropy(ref(x), y)
        ref_opt.zero_grad()
        ref_loss.backward()
        ref_opt.step()
        assert torch.allclose(loss, ref_loss.detach(), rtol=1e-6)  # the returned loss is not scaled
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        assert torch.allclose(p, q, rtol=1e-5, atol=1e-7)  # x128 then /128: the same update

    half = nn.Linear(4, 2).half()
    opt = poptorch.optim.AdamW(half.parameters(), lr=1e-3, accum_type=torch.float32)
    half(torch.randn(3, 4).half()).float().sum().backward()
    opt.step()
    assert half.weight.dtype == torch.float16 and half.weight.grad.dtype == torch.float16
    assert opt.state[half.weight]["exp_avg"].dtype == torch.float32  # fp32 accumulators, as asked
    with pytest.raises(poptorch.PopTorchError, match="loss_scaling"):
        poptorch.optim.Adam(half.parameters(), loss_scaling=-1)


def test_poptorch_options_output_modes_keywords_and_refusals():
    import torch
    from torch import nn

    import accelkit.facades.poptorch as poptorch

    net = nn.Linear(4, 2)
    x = torch.randn(8, 4)
    opts = poptorch.Options().deviceIterations(4)
    assert poptorch.inferenceModel(net, opts)(x).shape == (8, 2)  # Default in inference: All
    every = poptorch.inferenceModel(net, opts)
    every(x)
    opts.outputMode(poptorch.OutputMode.Final)
    final = poptorch.inferenceModel(net, opts)
    assert torch.allclose(final(x), net(x[6:]).detach())
    # the clock follows the mode: every iteration's outputs are a stream copy back each step, the last one's are not
    modelled = every.program.report, final.program.report
    assert (modelled[0].output_mode, modelled[1].output_mode) == ("all", "final")
    assert modelled[0].stream_syncs == modelled[1].stream_syncs + 1

    class TwoIn(nn.Module):  # two input tensors: two stream copies in, unless PopART's groupHostSync groups them
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return self.fc(a + b)

    runs = {}
    for grouped in (False, True):
        o = poptorch.Options().deviceIterations(4)
        if grouped:
            o._Popart.set("groupHostSync", True)
        runs[grouped] = poptorch.inferenceModel(TwoIn(), o)
        runs[grouped](x, x)
    assert runs[True].program.group_host_sync and not runs[False].program.group_host_sync
    assert (runs[False].program.report.stream_syncs, runs[True].program.report.stream_syncs) == (3, 2)
    opts.outputMode(poptorch.OutputMode.Sum)
    assert torch.allclose(poptorch.inferenceModel(net, opts)(x), net(x).detach().reshape(4, 2, 2).sum(0), atol=1e-6)
    opts.outputMode(poptorch.OutputMode.EveryN, output_return_period=2)
    assert poptorch.inferenceModel(net, opts)(x).shape == (4, 2)

    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(4, 2)

        def forward(self, x, double=False):
            return self.linear(x) * (2 if double else 1)

    scaled = Scaled()
    keyword = poptorch.inferenceModel(scaled)
    assert torch.allclose(keyword(x=x, double=True), 2 * scaled(x).detach())  # keywords reach forward
    assert torch.allclose(keyword(x, True), 2 * scaled(x).detach())  # the same call, positionally
    with pytest.raises(poptorch.PopTorchError, match="fixed at its first call"):
        keyword(x=x, double=False)  # another setting than the compiled program's

    with pytest.raises(poptorch.PopTorchError, match="not provided by accelkit"):
        poptorch.Options().setNoSuchThing(1)
    with pytest.raises(poptorch.PopTorchError, match="custom_op.*'LeakyRelu'.*cannot run"):
        poptorch.custom_op([x], "LeakyRelu", "custom.ops", 1, example_outputs=[x])
    with pytest.raises(poptorch.PopTorchError, match="ReductionType.Mean or ReductionType.Sum"):
        poptorch.Options().Training.accumulationAndReplicationReductionType(poptorch.ReductionType.NoReduction)


# ---- Groq GroqFlow --------------------------------------------------------------------------------
def test_groqflow_examples_build_run_benchmark_and_reload_from_the_cache(tmp_path):
    out = vendor_run(tmp_path, "groqflow_examples.py", synthetic=False).stdout  # the command line
    assert "built 'hello_world' for 1 x tsp" in out and "loaded from the cache: True" in out
    latency = float(re.search(r"benchmark latency (\d+\.\d+) us", out).group(1))
    assert latency > 0 and f"estimated latency {latency:.3f} us" in out  # benchmark is the modelled figure
    assert "GroqModel('hello_world': 1 x tsp, fp16)" in out and "MODELLED on tsp" in out
    assert "groqit(groqview=True) accepted, not simulated" in out and "compiler_flags=['--effort=standard']" in out
    assert (tmp_path / "groqflow_cache/hello_world/state.json").is_file()


def test_groqit_quantizes_to_int8_with_the_samples_ranges(tmp_path, capsys):
    """GroqFlow's post-training quantization: the samples set each layer's int8 grids; the build computes on them
    (an output on its grid, close to fp32 but not equal), is modelled at the TSP's int8 rate, says so, and other
    samples make another build."""
    import numpy as np
    import torch

    from accelkit.facades.groqflow import GroqFlowError, groqit
    from accelkit.runtime import facade_log

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 5)).eval()
    x = torch.rand(10)
    samples = [np.random.default_rng(i).random((1, 10), dtype=np.float32) for i in range(50)]
    g = groqit(model, {"input": x}, cache_dir=tmp_path, build_name="q", rebuild="always", quantization_samples=samples)
    out = capsys.readouterr().out
    assert "Quantizing ONNX model" in out and "Converting to FP16" not in out and "(int8," in out
    assert g.program.precision == "int8" and repr(g).endswith("int8)")
    assert set(g.quantization) == {"0", "2"} and all(len(r) == 4 for r in g.quantization.values())
    ref = model(x)
    y = g(input=x)
    lo, hi = g.quantization["2"][2:]
    step = (max(hi, 0) - min(lo, 0)) / 255
    assert not torch.equal(y, ref) and torch.allclose(y, ref, atol=4 * step)
    grid = (y - y.min()) / step  # every output sits on the last layer's int8 grid
    assert torch.allclose(grid, grid.round(), atol=1e-3)
    fp16 = groqit(model, {"input": x}, cache_dir=tmp_path, build_name="h", rebuild="always", monitor=False)
    assert fp16.program.precision == "fp16" and fp16.quantization is None
    assert g.estimate_performance().latency_s <= fp16.estimate_performance().latency_s  # int8: 4x the fp16 rate
    assert any(a.emulated and "quantization_samples" in a.option for a in facade_log.accepted())
    # the same samples reuse the build; others calibrate other ranges, a stale key: rebuilt
    again = groqit(model, {"input": x}, cache_dir=tmp_path, build_name="q", quantization_samples=samples)
    assert again.state.loaded_from_cache and again.quantization == g.quantization
    other = groqit(model, {"input": x}, cache_dir=tmp_path, build_name="q", monitor=False,
                   quantization_samples=[s * 3 for s in samples])
    assert not other.state.loaded_from_cache
    with pytest.raises(GroqFlowError, match="quantization_samples is empty"):
        groqit(model, {"input": x}, cache_dir=tmp_path, quantization_samples=[])
    with pytest.raises(GroqFlowError, match="sample 0 does not run"):
        groqit(model, {"input": x}, cache_dir=tmp_path, quantization_samples=[np.zeros((1, 7), np.float32)])


def test_groqit_refuses_what_changes_the_numbers(tmp_path):
    import torch

    from accelkit.facades.groqflow import GroqFlowError, groqit

    model = torch.nn.Linear(4, 2)
    with pytest.raises(GroqFlowError, match="quantization_samples and a custom sequence"):
        groqit(model, {"input": torch.rand(3, 4)}, cache_dir=tmp_path, quantization_samples=[torch.rand(3, 4)],
               sequence=["export", "compile"])
    with pytest.raises(GroqFlowError, match="sequence"):
        groqit(model, {"input": torch.rand(3, 4)}, cache_dir=tmp_path, sequence=["export", "compile"])

    from accelkit.facades.groqflow import stages

    class Quantize(stages.Stage):
        pass

    odd = stages.Sequence("odd", "", [stages.ExportPytorchModel(), Quantize(), stages.CompileOnnx(), stages.Assemble()])
    with pytest.raises(GroqFlowError, match="stage Quantize is not one accelkit can follow"):
        groqit(model, {"input": torch.rand(3, 4)}, cache_dir=tmp_path, sequence=odd)
    export_only = stages.Sequence("export_only", "", [stages.ExportPytorchModel(), stages.ConvertOnnxToFp16()])
    with pytest.raises(GroqFlowError, match="has no CompileOnnx or Assemble"):
        groqit(model, {"input": torch.rand(3, 4)}, cache_dir=tmp_path, sequence=export_only)


def test_groqflow_sequence_example_builds_fp32_through_onnxflow_stages(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GROQFLOW_CACHE_DIR", str(tmp_path / "groqflow-cache"))
    out = in_process(tmp_path, monkeypatch, capsys, "groqflow_sequence.py", synthetic=False)
    assert "built 'groqflow_sequence' for 1 x tsp (fp32" in out  # no ConvertOnnxToFp16: an fp32 build
    assert "onnxflow.justbuildit.stage" in out and "groqflow.justgroqit.compile" in out  # answered for the run
    assert "groqit(sequence='onnx_sequence') accepted" in out and "MODELLED on tsp" in out


# ---- the launcher ---------------------------------------------------------------------------------
def test_vendor_names_exist_only_during_the_run_and_never_shadow_an_installed_sdk(tmp_path, monkeypatch):
    import importlib
    import importlib.util
    import sys as _sys

    from accelkit.vendor import aliases

    fake_sdk = tmp_path / "site" / "poptorch"
    fake_sdk.mkdir(parents=True)
    (fake_sdk / "__init__.py").write_text("REAL = True\n")
    with aliases.installed() as finder:
        sambaflow = importlib.import_module("sambaflow.samba.utils.argparser")
        assert sambaflow.parse_app_args.__module__ == "accelkit.facades.samba.utils"
        import logging

        assert isinstance(importlib.import_module("sambaflow.logging").samba_logger, logging.Logger)
        assert "+accelkit.sim" in importlib.import_module("sambaflow").__version__
        with pytest.raises(AttributeError, match="accelkit's facade accelkit.facades.samba does not provide it"):
            importlib.import_module("sambaflow.samba").no_such_call  # noqa: B018 - the error names the facade
        from accelkit.facades.cerebras.clock import CerebrasError

        assert importlib.util.find_spec("cerebras.framework") is not None  # so the R1.x zoo imports the runtime...
        cb_model = importlib.import_module("cerebras.framework.torch.core").cb_model
        assert cb_model.use_cs() is False and cb_model.num_tasks() == 1  # ...which answers: no CS system attached
        with pytest.raises(CerebrasError, match="asks the CS system's runtime, which is not started"):
            cb_model.get_run_step()  # the CS runner's question, before cbtorch.initialize(cs_ip=...) started it
        with pytest.raises(CerebrasError, match="R1.x Model Zoo's CS-system path.*not simulated"):
            cb_model.is_ltc_lowering  # noqa: B018 - a name only the real runtime has: told, not stubbed
        assert importlib.import_module("cerebras_appliance.pb.stack.autogen_pb2").AP_DISABLED == 0  # R1.9's zoo
        with pytest.raises(CerebrasError, match="CS-system path"):
            importlib.import_module("cerebras_appliance").DEFAULT_COMPILE_DIR  # noqa: B018 - R1.9's CSX path
        monkeypatch.syspath_prepend(str(tmp_path / "site"))
        importlib.invalidate_caches()
        poptorch = importlib.import_module("poptorch")
        assert getattr(poptorch, "REAL", False)  # the installed package wins
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("poptorch.optim")  # never patched into a real SDK
        assert "poptorch" not in finder.served
        (tmp_path / "site" / "onnxflow").mkdir()
        (tmp_path / "site" / "onnxflow" / "__init__.py").write_text("REAL = True\n")
        importlib.invalidate_caches()
        assert getattr(importlib.import_module("onnxflow"), "REAL", False)  # a real onnxflow wins too
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("onnxflow.justbuildit.stage")
    assert "sambaflow" not in _sys.modules and "sambaflow.samba" not in _sys.modules  # gone after the run
    _sys.modules.pop("poptorch", None)
    _sys.modules.pop("onnxflow", None)


def test_python_dash_m_launcher_passes_argv_and_reports_an_unknown_option(tmp_path, monkeypatch, capsys):
    import runpy

    (tmp_path / "argv.py").write_text("import sys\nimport poptorch\nprint('argv', sys.argv[1:])\n"
                                      "poptorch.Options().setNoSuchThing(1)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["python -m accelkit.vendor", "argv.py", "--x", "1"])
    with pytest.raises(SystemExit) as stop:  # `python -m accelkit.vendor argv.py --x 1`, its __main__ in this process
        runpy.run_module("accelkit.vendor", run_name="__main__", alter_sys=True)
    out, err = capsys.readouterr()
    assert "argv ['--x', '1']" in out
    assert stop.value.code == 1 and "Traceback" not in err
    assert "argv.py:4: poptorch.Options().setNoSuchThing(1)" in err and "not provided by accelkit" in err


def test_sambaflow_lenet_trains_with_sambaloader_then_infers_on_the_training_pef(tmp_path, monkeypatch, capsys):
    pef = "out/lenet/lenet.pef"
    out = in_process(tmp_path, monkeypatch, capsys, "samba_lenet.py", "compile", "-b", "32", "-p", pef)
    assert "training (SGD)" in out and "session.compile(squeeze_bs_dim=True) accepted, not simulated" in out
    out = in_process(tmp_path, monkeypatch, capsys, "samba_lenet.py", "run", "-b", "32", "-p", pef, "-e", "1")
    falls(out)
    assert "sambaflow.samba.sambaloader" in out and "62 steps" in out and "opt" in out
    out = in_process(tmp_path, monkeypatch, capsys, "samba_lenet.py", "run", "--inference", "-b", "32", "-p", pef,
                     "--init-ckpt-path", "lenet_trained.pt")  # the training PEF, forward only
    accuracy = float(re.search(r"accuracy (\d+\.\d+)%", out).group(1))
    assert accuracy > 50  # the trained weights, loaded before trace_graph, predict
    assert "15 steps" in out and "bckwd" not in out.split("SambaFlow app on")[1]


def test_poptorch_lamb_scales_each_update_by_the_trust_ratio():
    import torch

    import accelkit.facades.poptorch as poptorch

    w = torch.nn.Parameter(torch.full((4,), 2.0))  # ||w|| = 4
    opt = poptorch.optim.LAMB([w], lr=0.1, weight_decay=0.0)
    w.grad = torch.tensor([1.0, -1.0, 1.0, -1.0])
    opt.step()
    # Adam's first bias-corrected direction is sign(g) (norm 2), so the trust ratio is 4 / 2 and the step 0.1 x 2
    assert torch.allclose(w.detach(), torch.tensor([1.8, 2.2, 1.8, 2.2]), atol=1e-5)
    capped = torch.nn.Parameter(torch.full((4,), 2.0))
    opt = poptorch.optim.LAMB([capped], lr=0.1, weight_decay=0.0, max_weight_norm=1.0)
    capped.grad = torch.tensor([1.0, -1.0, 1.0, -1.0])
    opt.step()
    assert torch.allclose(capped.detach(), torch.tensor([1.95, 2.05, 1.95, 2.05]), atol=1e-5)  # ratio 1 / 2


def test_synthetic_data_builds_hf_models_and_a_local_tokenizer_and_restores_the_hub():
    pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")

    from accelkit.vendor import synthetic

    before = transformers.AutoModel.from_pretrained.__func__
    with synthetic.installed():
        model = transformers.AutoModel.from_pretrained("google-bert/bert-base-uncased")
        assert type(model).__name__ == "BertModel" and model.config.hidden_size == 64
        head = transformers.BertForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=3)
        assert head.config.num_labels == 3
        tok = transformers.AutoTokenizer.from_pretrained("M-FAC/bert-tiny-finetuned-sst2")
        said = synthetic.substitutions()
    assert transformers.AutoModel.from_pretrained.__func__ is before  # the hub is itself again after the run
    assert any("RANDOM weights" in s for s in said)
    assert any("built on this machine" in s and "bert-tiny" in s for s in said)
    enc = tok(["The compiler places each kernel", "on the chip"], padding="max_length", max_length=12,
              truncation=True, return_tensors="pt")
    assert enc["input_ids"].shape == (2, 12) and int(enc["input_ids"].max()) < model.config.vocab_size
    assert (enc["input_ids"][:, 0] == tok.cls_token_id).all() and tok.pad_token_id in enc["input_ids"][1].tolist()
    assert tok.decode(enc["input_ids"][0], skip_special_tokens=True) == "the compiler places each kernel"
    assert tok.decode(tok("Qwxz RDU")["input_ids"], skip_special_tokens=True) == "qwxz rdu"  # pieces: never [UNK]
    assert model(**enc).last_hidden_state.shape == (2, 12, 64)  # its ids fit the small model
    pairs = tok.batch_encode_plus([("Where is the weight?", "the weights stream in from memory " * 20)] * 2,
                                  max_length=16, pad_to_max_length="right")  # transformers 4's call, as tutorials make it
    assert [len(ids) for ids in pairs["input_ids"]] == [16, 16] and pairs["input_ids"][0].count(tok.sep_token_id) == 2


def test_local_tokenizer_splits_everyday_english_as_bert_does_and_answers_transformers_4_calls():
    pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")

    from accelkit.vendor import synthetic
    from accelkit.vendor.tokenizer import VOCAB_SIZE, english_words

    assert len(english_words()) >= 10000 and english_words()[:3] == ["the", "to", "and"]
    with synthetic.installed():
        bert = transformers.BertTokenizerFast.from_pretrained("bert-base-uncased")
        gpt2 = transformers.AutoTokenizer.from_pretrained("gpt2")
        model = transformers.BertForQuestionAnswering.from_pretrained("bert-base-uncased")
    question = "When were Institutes of technology developed?"
    context = "Institutes of technology in Venezuela were developed in the 1950s"
    # common words are whole tokens, a rarer one a stem and an ending: about BERT's own count (7 for the question)
    assert bert.tokenize(question) == ["when", "were", "institute", "##s", "of", "technology", "developed", "?"]
    windows = bert(question, context, truncation="only_second", max_length=32, stride=16,
                   return_overflowing_tokens=True, return_offsets_mapping=True, padding="max_length")
    assert all(len(ids) == 32 for ids in windows["input_ids"])  # the tutorial's own example: no truncation error
    assert "token_type_ids" in windows and "token_type_ids" not in gpt2("a b")  # each class's own outputs
    assert windows["token_type_ids"][0][-1] in (0, 1) and 1 in windows["token_type_ids"][0]
    pair = bert.encode_plus((question, context))  # transformers 4 took a (question, context) tuple as one pair
    assert pair["input_ids"].count(bert.sep_token_id) == 2 and isinstance(pair["input_ids"][0], int)
    assert len(bert) == VOCAB_SIZE == model.config.vocab_size  # every id fits the small model


def test_synthetic_data_loads_a_checkpoint_the_script_saved_and_stands_in_for_the_hubs(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")

    from accelkit.vendor import synthetic

    with synthetic.installed():
        model = transformers.BertForQuestionAnswering.from_pretrained("bert-base-uncased")
        with torch.no_grad():
            model.qa_outputs.bias.fill_(0.25)  # "trained"
        model.save_pretrained(tmp_path / "ckpt")
        again = transformers.BertForQuestionAnswering.from_pretrained(tmp_path / "ckpt")
        auto = transformers.AutoModelForQuestionAnswering.from_pretrained(str(tmp_path / "ckpt"))
        config = transformers.AutoConfig.from_pretrained(str(tmp_path / "ckpt"))
        fresh = transformers.BertForQuestionAnswering.from_pretrained("bert-base-uncased")
        said = synthetic.substitutions()
    for loaded in (again, auto):
        assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), loaded.state_dict().values(),
                                                        strict=True))
    assert config.hidden_size == model.config.hidden_size
    assert not torch.equal(fresh.qa_outputs.bias, model.qa_outputs.bias)  # a hub name still stands in
    assert any("loads the checkpoint saved in that folder" in s for s in said)


def test_a_call_whose_numerics_keep_this_cpu_busy_for_minutes_says_so_once(monkeypatch, capsys):
    import torch
    from torch import nn

    import accelkit.facades.poptorch as poptorch
    from accelkit.runtime import facade_log

    class WithLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 3)

        def forward(self, x, labels):
            out = self.fc(x)
            return out, nn.functional.cross_entropy(out, labels)

    x, y = torch.randn(4, 8), torch.randint(0, 3, (4,))
    quick = poptorch.trainingModel(WithLoss(), optimizer=torch.optim.SGD(WithLoss().parameters(), lr=0.1))
    quick(x, y)
    assert "computes" not in capsys.readouterr().err  # a small model: nothing to say
    monkeypatch.setattr(facade_log, "cpu_matmul_rate", lambda: 1.0)  # a CPU of one FLOP per second
    with facade_log.collecting(max_calls=5):
        slow = poptorch.trainingModel(WithLoss())
        slow(x, y)
        slow(x, y)
    err = capsys.readouterr().err
    assert err.count("accelkit: each call of poptorch.trainingModel(WithLoss) computes 4 samples' training") == 1
    assert "(MEASURED)" in err and "stops after 5 call(s)" in err and "modelled, not this" in err


def test_popart_option_enums_are_popart_integers_that_print_their_names():
    from accelkit.facades.poptorch import popart

    assert int(popart.SubgraphCopyingStrategy.JustInTime) == 1  # graphcore/popart sessionoptions.hpp
    assert int(popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized) == 3
    assert repr(popart.RecomputationType.Pipeline) == "RecomputationType.Pipeline"
    with pytest.raises(AttributeError, match="OnEnterAndExit, JustInTime"):
        _ = popart.SubgraphCopyingStrategy.Sometimes
    assert str(popart.SomeNewerEnum.Value) == "SomeNewerEnum.Value"  # an enum accelkit has no list for: its name


def test_poptorch_adamw_bias_correction_false_leaves_the_moments_uncorrected():
    import torch

    import accelkit.facades.poptorch as poptorch

    torch.manual_seed(0)
    w0, grads = torch.randn(5), [torch.randn(5) for _ in range(3)]
    corrected, plain = torch.nn.Parameter(w0.clone()), torch.nn.Parameter(w0.clone())
    ref = torch.nn.Parameter(w0.clone())
    a = poptorch.optim.AdamW([corrected], lr=0.1, weight_decay=0.01, eps=1e-6, bias_correction=True)
    b = poptorch.optim.AdamW([plain], lr=0.1, weight_decay=0.01, eps=1e-6, bias_correction=False)
    r = torch.optim.AdamW([ref], lr=0.1, weight_decay=0.01, eps=1e-6)
    m, v, w = torch.zeros(5), torch.zeros(5), w0.clone()
    for g in grads:
        for p, opt in ((corrected, a), (plain, b), (ref, r)):
            p.grad = g.clone()
            opt.step()
        w = w * (1 - 0.1 * 0.01)
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        w = w - 0.1 * m / (v.sqrt() + 1e-6)
    assert torch.allclose(corrected, ref)  # True (the default): PyTorch's AdamW
    assert torch.allclose(plain, w, atol=1e-6)  # False: w -= lr m / (sqrt(v) + eps), uncorrected
    assert not torch.allclose(plain, ref)


def test_poptorch_block_inside_forward_pipelines_over_its_ipus():
    import torch
    from torch import nn

    import accelkit.facades.poptorch as poptorch

    class Network(nn.Module):  # the poptorch.Block pattern of Graphcore's model-parallelism examples
        def __init__(self) -> None:
            super().__init__()
            self.layer1, self.layer2, self.layer3 = nn.Linear(8, 16), nn.Linear(16, 16), nn.Linear(16, 3)
            self.loss = nn.CrossEntropyLoss()

        def forward(self, x, labels):
            with poptorch.Block(ipu_id=0):
                x = torch.relu(self.layer1(x))
            with poptorch.Block(ipu_id=1):
                x = torch.relu(self.layer2(x))
            with poptorch.Block(ipu_id=2):
                x = self.layer3(x)
            return x, self.loss(x, labels)

    torch.manual_seed(0)
    net = Network()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    model = poptorch.trainingModel(net, optimizer=torch.optim.SGD(net.parameters(), lr=0.1))
    x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
    model(x, y)
    assert model.pipeline.ipus == 3 and model.chips == 3 and "pipeline over 3 IPUs" in str(model.report())
    # each Block begins at the first layer called inside it: that layer's forward, backward and update on its IPU
    prog = model.program
    chip = {name: r.chip for r in prog.placement.regions for name in r.kernels}
    on: dict[str, set[int]] = {}
    for k in prog.kernels:
        layer = k.module.rsplit(".", 1)[-1]
        if layer.startswith("layer"):
            on.setdefault(layer, set()).add(chip[k.name])
    assert on == {"layer1": {0}, "layer2": {1}, "layer3": {2}}
    reference = Network()
    reference.load_state_dict(before)
    opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    reference(x, y)[1].backward()
    opt.step()
    for p, q in zip(net.parameters(), reference.parameters(), strict=True):
        assert torch.equal(p, q)  # counting the Blocks ran forward without touching the weights or the step


def test_poptorch_mnist_and_pipelining_tutorials(tmp_path, monkeypatch, capsys):
    out = in_process(tmp_path, monkeypatch, capsys, "poptorch_mnist.py", "--batch-size", "32",
                     "--device-iterations", "10", "--test-batch-size", "50", "--lr", "0.2")
    falls(out)  # the script also asserts OutputMode.All returns every device iteration's predictions and losses
    assert float(re.search(r"Accuracy on test set: (\d+\.\d+)%", out).group(1)) > 60
    assert "trainingModel(TrainingModelWithLoss on 1 x gc200)" in out and "deviceIterations 10" in out
    assert "60 steps, 1920 samples" in out  # 6 calls of 10 device iterations: one weight update each

    out = in_process(tmp_path, monkeypatch, capsys, "poptorch_pipelining.py")
    falls(out)
    train, infer = out.split("trainingModel(")[1].split("inferenceModel(")
    # Block("B1")..("B4") in forward (and "B4" again for the loss) placed by the PipelinedExecution's Stages
    assert "pipeline over 4 IPUs: IPU 0 (B1); IPU 1 (B2); IPU 2 (B3); IPU 3 (B4)" in train and "bubble" in train
    assert "4 x gc200" in infer and "deviceIterations 10" in infer  # options cloned from training's strategy
    assert "poptorch.set_available_memory(..., 0.3) accepted" in out
    assert "setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(False)) accepted" in out
    assert "poptorch.DataLoader(num_workers=16) accepted" in out


def test_poptorch_device_iterations_clone_strategy_distributed_and_refusals(monkeypatch):
    import torch
    from torch import nn

    import accelkit.facades.poptorch as poptorch

    class WithLoss(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))

        def forward(self, x, labels):
            out = self.body(x)
            return out, nn.functional.cross_entropy(out, labels)

    torch.manual_seed(0)
    net, ref = WithLoss(), WithLoss()
    ref.load_state_dict(net.state_dict())
    opts = poptorch.Options().deviceIterations(3)
    model = poptorch.trainingModel(net, opts, optimizer=torch.optim.SGD(net.parameters(), lr=0.2))
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.2)
    x, y = torch.randn(12, 6), torch.randint(0, 3, (12,))
    _, loss = model(x, y)  # one call, three device iterations: three weight updates of 4 samples each
    for xs, ys in zip(x.chunk(3), y.chunk(3), strict=True):
        ref_opt.zero_grad()
        ref_loss = ref(xs, ys)[1]
        ref_loss.backward()
        ref_opt.step()
    assert torch.allclose(loss, ref_loss.detach())  # OutputMode.Default in training: the last iteration's loss
    assert all(torch.allclose(p, q) for p, q in zip(net.parameters(), ref.parameters(), strict=True))
    assert model._session is not None and model._session.steps == 3

    strategy = poptorch.PipelinedExecution(poptorch.Stage("enc").ipu(0), poptorch.Stage("dec", "head").ipu(1))
    base = poptorch.Options()
    base.setExecutionStrategy(strategy)
    copy = base.clone().deviceIterations(5)
    assert base.device_iterations == 1 and copy.block_ipus() == {"enc": 0, "dec": 1, "head": 1}
    layers = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4))
    layers[1] = poptorch.BeginBlock(layers[1], "dec")  # no ipu_id: the strategy's Stage places it
    layers[2] = poptorch.BeginBlock(layers[2], "head")
    assert poptorch.pipeline_plan(layers, copy.block_ipus()).ipus == 2
    assert poptorch.pipeline_plan(layers).ipus == 3  # without the strategy: one IPU after another

    assert poptorch.Options().Distributed.numProcesses == 1
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    with pytest.raises(poptorch.PopTorchError, match=r"replicationFactor\(processes x replicas"):
        poptorch.Options()  # mpirun -np 4: four processes, which accelkit does not start
    monkeypatch.delenv("OMPI_COMM_WORLD_SIZE")
    assert poptorch.Options().Distributed.configureProcessId(0, 1).processId == 0
    x = torch.randn(2, 3)
    assert poptorch.set_available_memory(x, 0.2) is x
    with pytest.raises(poptorch.PopTorchError, match="between 0 and 1"):
        poptorch.set_available_memory(x, 2)
    with pytest.raises(poptorch.PopTorchError, match="Stages, block ids or an AutoStage"):
        poptorch.PipelinedExecution(3)


def test_cstorch_amp_and_metrics_loop(tmp_path, monkeypatch, capsys):
    out = in_process(tmp_path, monkeypatch, capsys, "cstorch_amp_eval.py", synthetic=False)
    falls(out)
    assert "Backend('CSX': simulated CS-2, fp16)" in out and "(mode 'pipelined', fp16)" in out  # set_half_dtype
    assert "loss scale 32768 after 40 steps" in out  # the dynamic scaler's state, through cstorch.save / load
    assert float(re.search(r"eval accuracy (\d\.\d+) over 8 steps", out).group(1)) > 0.9
    assert "48 steps" in out  # 40 training steps and 8 eval steps (forward only) on the backend's clock


def test_cstorch_grad_scaler_skips_overflow_and_scales_exactly():
    import torch

    import accelkit.facades.cerebras as cstorch

    torch.manual_seed(0)
    a, b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    x = torch.randn(4, 3)
    opt_a, opt_b = torch.optim.SGD(a.parameters(), lr=0.1), torch.optim.SGD(b.parameters(), lr=0.1)
    cstorch.amp.optimizer_step(a(x).pow(2).mean(), opt_a, cstorch.amp.GradScaler(loss_scale=256.0))
    b(x).pow(2).mean().backward()
    opt_b.step()
    assert all(torch.allclose(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))  # x256 then /256

    scaler = cstorch.amp.GradScaler(loss_scale="dynamic", init_scale=1024.0, steps_per_increase=2)
    before = [p.clone() for p in a.parameters()]
    cstorch.amp.optimizer_step(a(x).sum() * float("inf"), opt_a, scaler)  # overflow: skipped, scale halves
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), before, strict=True))
    assert scaler.get_scale() == 512.0 and scaler.skipped_steps == 1
    for _ in range(2):
        cstorch.amp.optimizer_step(a(x).pow(2).mean(), opt_a, scaler)
    assert scaler.get_scale() == 1024.0  # two clean steps: doubled
    capped = cstorch.amp.GradScaler(loss_scale="dynamic", init_scale=1024.0, steps_per_increase=1,
                                    max_loss_scale=1024.0)
    cstorch.amp.optimizer_step(a(x).pow(2).mean(), opt_a, capped)
    assert capped.get_scale() == 1024.0 and capped.get_non_clamped_scale() == 2048.0  # doubled, then clamped
    with pytest.raises(cstorch.CerebrasError, match="not both"):
        cstorch.amp.optimizer_step(a(x).sum(), opt_a, scaler, max_gradient_norm=1.0, max_gradient_value=1.0)

    accuracy = cstorch.metrics.AccuracyMetric("acc")
    accuracy(labels=torch.tensor([1, 2, 3, 4]), predictions=torch.tensor([1, 2, 0, 0]))
    assert float(accuracy(labels=torch.tensor([5, 6]), predictions=torch.tensor([5, 6]))) == pytest.approx(4 / 6)
    assert accuracy.num_updates == 2 and dict(cstorch.metrics.get_all_metrics())["acc"] is accuracy


def test_sambaflow_generative_nlp_app_compiles_then_trains_gpt2_with_app_set_output_gradients(tmp_path, monkeypatch,
                                                                                             capsys, caplog):
    pytest.importorskip("transformers")
    common = ("-b", "8", "--config_name", "gpt2", "--max_seq_length", "16")
    out = in_process(tmp_path, monkeypatch, capsys, "samba_generative.py", "compile", *common)
    assert "compiled 'hf_transformer'" in out and "training (AdamW + AdamW + AdamW)" in out
    out = in_process(tmp_path, monkeypatch, capsys, "samba_generative.py", "run", *common,
                     "-p", "out/hf_transformer/hf_transformer.pef", "--steps", "40")
    falls(out)  # GRADNORM / OPT with three optimizers, the per-token loss seeded by traced_outputs[0].sn_grad
    assert float(re.search(r"Final eval accuracy: (\d\.\d+)", out).group(1)) > 0.5  # FWD with {"lr": 0, "p": 0}
    assert "sambaflow.sambacollections" in out and "directives.op_fusion(..., 'Encoder') accepted" in out
    logged = [r.getMessage() for r in caplog.records if r.name == "sambaflow"]
    assert logged.count("Warning: Patched gpt2_conv1d_forward function called instead of conv1d.forward") == 1
    # written for transformers 4 (GPT2Attention.bias, modeling_utils.Conv1D): answered for the run and said so
    assert "GPT2Attention.bias, transformers 4's causal-mask buffer" in out
    assert "modeling_utils.Conv1D (transformers 4's name)" in out


def test_transformers_4_attributes_are_answered_only_inside_the_block_and_keep_gpt2s_numbers():
    pytest.importorskip("transformers")
    import torch
    import transformers
    from transformers.models.gpt2.modeling_gpt2 import GPT2Attention

    from accelkit.vendor import hf_compat

    config = transformers.GPT2Config(n_embd=16, n_layer=1, n_head=2, n_positions=8, vocab_size=50)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 50, (2, 8))
    before = model(ids).logits
    had_bias, had_conv = "bias" in vars(GPT2Attention), hasattr(transformers.modeling_utils, "Conv1D")
    with hf_compat.installed([".attn.bias", "modeling_utils.Conv1D"]) as notes:
        attn = model.transformer.h[0].attn
        assert torch.equal(attn.bias[0, 0], torch.tril(torch.ones(8, 8, dtype=torch.bool)))  # 4.x's buffer
        attn.bias = attn.bias.expand(1, 1, 8, 8)  # the tutorial's own patch is kept...
        assert attn.bias.shape == (1, 1, 8, 8)
        assert torch.allclose(model(ids).logits, before)  # ...and attention still masks causally
        assert transformers.modeling_utils.Conv1D is transformers.pytorch_utils.Conv1D
        assert len(notes) == (not had_bias) + (not had_conv)
    assert ("bias" in vars(GPT2Attention)) == had_bias  # gone again after the run
    assert hasattr(transformers.modeling_utils, "Conv1D") == had_conv


def test_hf_compat_gives_a_layer_hook_transformers_4s_tuple_output_and_only_what_the_script_asks_for():
    import torch
    import transformers

    from accelkit.vendor import hf_compat

    config = transformers.BertConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                                     vocab_size=50, max_position_embeddings=16)
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    ids = torch.randint(0, 50, (3, 8))
    before = model(ids).last_hidden_state
    seen: list[object] = []

    def checkpoint_outputs(module, inputs, outputs):  # Graphcore's BERT tutorial's hook, as written for 4.x
        seen.append(type(outputs))
        return tuple(y * 1 for y in outputs)

    with hf_compat.installed(["register_forward_hook"]) as notes:
        assert len(notes) == 1 and "1-tuple" in notes[0]
        assert not hasattr(transformers.modeling_utils, "Conv1D") or "Conv1D" not in " ".join(notes)
        handles = [layer.register_forward_hook(checkpoint_outputs) for layer in model.encoder.layer]
        after = model(ids).last_hidden_state
    assert seen == [tuple, tuple]  # each layer's hook saw a tuple, not a tensor it would split along the batch
    assert torch.allclose(after, before)  # and the values did not change
    for h in handles:
        h.remove()
    assert "register_forward_hook" not in vars(transformers.modeling_layers.GradientCheckpointingLayer)


def test_samba_app_set_output_gradient_clipping_placeholders_and_int16_inputs_match_plain_pytorch(tmp_path):
    import copy

    import torch
    from torch import nn

    import accelkit.facades.samba as samba
    from accelkit.facades.samba import utils
    from accelkit.facades.samba.collections import OrderedSet

    class PerSample(nn.Module):  # returns a loss per sample, as generative_nlp's patched GPT-2 returns one per token
        def __init__(self) -> None:
            super().__init__()
            self.emb, self.head = nn.Embedding(10, 6), nn.Linear(6, 3)
            self.drop = nn.Dropout(0.5)

        def forward(self, ids, unused, labels):
            assert unused is None
            logits = self.head(self.drop(self.emb(ids)))
            return nn.functional.cross_entropy(logits, labels, reduction="none"), logits

    torch.manual_seed(0)
    model = samba.from_torch_model_(PerSample())
    ref = copy.deepcopy(model)
    ids = torch.randint(0, 10, (4,), dtype=torch.int32)
    labels = torch.randint(0, 3, (4,), dtype=torch.int16)
    inputs = (samba.from_torch_tensor(ids, name="ids", batch_dim=0), None,
              samba.from_torch_tensor(labels, name="labels", batch_dim=0))
    optims = [samba.optim.SGD(OrderedSet(model.emb.parameters()), lr=0.5, max_grad_norm=0.01),
              samba.optim.SGD(list(model.head.parameters()), lr=0.5)]
    pef = str(tmp_path / "app.pef")
    samba.session.compile(model, inputs, optims, name="app", init_output_grads=True, pef=pef, verbose=False)
    outs = utils.trace_graph(model, inputs, optims, pef=pef, init_output_grads=True)
    weights = torch.tensor([0.1, 0.2, 0.3, 0.4])
    with pytest.raises(samba.SambaError, match="sn_grad"):
        samba.session.run([inputs[0], inputs[2]], outs, section_types=["FWD", "BCKWD", "OPT"])
    outs[0].sn_grad = weights
    samba.session.run([inputs[0], inputs[2]], outs, section_types=["FWD", "BCKWD", "GRADNORM", "OPT"],
                      hyperparam_dict={"p": 0.0})  # dropout off: the step is deterministic

    ref.drop.p = 0.0
    loss, _ = ref(ids.long(), None, labels.long())
    loss.backward(weights)
    torch.nn.utils.clip_grad_norm_(list(ref.emb.parameters()), 0.01)
    with torch.no_grad():
        for p in ref.parameters():
            p -= 0.5 * p.grad
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        assert torch.allclose(p, q, atol=1e-6)
    assert model.drop.p == 0.0
    assert torch.equal(samba.addmm(torch.ones(2), torch.eye(2), torch.tensor([[1.0, 2.0], [3.0, 4.0]]),
                                   is_transposed=True), torch.tensor([[2.0, 4.0], [3.0, 5.0]]))
    with pytest.raises(samba.SambaError, match="GRADNORM"):
        samba.session.run([inputs[0], inputs[2]], outs, section_types=["FWD", "GRADNORM"])


# ---- the SDK surface the vendors' own tutorials use ------------------------------------------------
def test_sambaflow_logreg_with_the_compile_arguments_its_readme_documents(tmp_path, monkeypatch, capsys):
    out = in_process(tmp_path, monkeypatch, capsys, "samba_logreg.py", "compile", "-b", "32", "--pef-name=logreg",
                     "--output-folder=out", "--num-tiles", "4", "--resources-scaling-factors", "0.8", "0.8", "0.8",
                     "--arch", "sn20")
    pef = tmp_path / "out" / "logreg" / "logreg.pef"
    assert f"[info    ] PEF file {pef} created" in out and (pef / "manifest.json").is_file()  # SambaFlow's own line
    assert f"[info    ] Logs are generated in {pef.parent}" in out and (pef.parent / "compile.log").is_file()
    assert "SambaFlow: --num-tiles 4 accepted, not simulated" in out
    assert "--resources-scaling-factors 0.8 0.8 0.8 accepted" in out and "--arch sn20 accepted" in out
    # its run line, `run --pef=out/logreg/logreg.pef --log-level=error`: test_sambaflow_logreg_compiles_then_trains_on_mnist


def test_samba_helpers_for_test_subcommands_and_reports(tmp_path):
    import json

    import torch

    from accelkit.facades.samba import SambaError, env, utils
    from accelkit.facades.samba.parameter import SambaParameter

    assert env.use_mock_samba_runtime() is False  # real values: apps keep their real accuracy bounds
    gold = torch.tensor([1.0, -2.0, 4.0])
    assert utils.assert_close(gold + 0.01, gold, "out", threshold=0.01) == pytest.approx(0.0025, rel=1e-4)
    with pytest.raises(SambaError, match="'fc1__weight__grad'.*above the threshold"):
        utils.assert_close(gold * 1.5, gold, "fc1__weight__grad", threshold=0.03)
    utils.AccuracyReport(val_metrics={"acc": 0.9}, batch_size=32, num_iterations=10).save(tmp_path / "r" / "acc.json")
    assert json.loads((tmp_path / "r" / "acc.json").read_text())["val_metrics"] == {"acc": 0.9}
    p = SambaParameter(shape=(2, 3), dtype=torch.float32, materializer=lambda _: torch.ones(3, 2).t())
    assert isinstance(p, torch.nn.Parameter) and p.shape == (2, 3) and float(p.sum()) == 6.0


def test_groqflow_proof_point_binds_keywords_by_name_benchmarks_and_opens_its_view(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GROQFLOW_CACHE_DIR", str(tmp_path / "cache"))
    out = in_process(tmp_path, monkeypatch, capsys, "groqflow_proof_point.py")
    # attention_mask reaches forward's attention_mask (bound by position it would land on past_key_values)
    assert float(re.search(r"max difference (\d+\.\d+)", out).group(1)) < 0.01
    assert 'Building "tiny_decoder"' in out and "    \u2713 Converting to FP16" in out
    assert f"Woohoo! Saved to {tmp_path / 'cache' / 'tiny_decoder'}" in out
    assert re.search(r"\d\.\d{7} seconds\n[\d.]+ inferences per second", out)
    assert "groq-compiler --effort=high tiny_decoder.onnx (not run" in out
    assert (tmp_path / "cache" / "tiny_decoder" / "groqview.html").is_file() and "gmodel.groqview() accepted" in out
    assert f"cache: {tmp_path / 'cache'}" in out  # groqflow.common.build.DEFAULT_CACHE_DIR


def test_poptorch_anchors_popart_options_popdist_and_synthetic_data(tmp_path):
    proc = vendor_run(tmp_path, "poptorch_observe.py")  # the command line
    out = proc.stdout + proc.stderr
    falls(out)
    assert re.search(r"^Graph compilation: 100%\|\u2588+\| 100/100 \[\d\d:\d\d<00:00\]$", out, re.M)
    assert "anchored gradient of fc2.bias: (10,), nonzero True" in out
    assert "tensor names: ['fc1.weight', 'fc1.bias']" in out and "first image (28, 28)" in out
    assert "opts._Popart.set('outlineThreshold', 10.0) accepted, not simulated" in out
    assert "poptorch.recomputationCheckpoint(...) accepted" in out and "enableSyntheticData(True) accepted" in out
    assert "popdist, popdist.poptorch" in out  # answered for the run; isPopdistEnvSet() is False: one process


def test_poptorch_fp16_optimizer_state_trains_and_stochastic_rounding_is_unbiased():
    import torch

    from accelkit import poptorch
    from accelkit.facades.poptorch.optim import round_to

    # a quarter of an fp16 step above 1.0: nearest rounding always loses it, stochastic rounding keeps it on average
    x = torch.full((20000,), 1.0 + 2.0 ** -12)
    assert float(round_to(x, torch.float16).float().mean()) == 1.0
    torch.manual_seed(0)
    mean = float(round_to(x, torch.float16, stochastic=True).float().mean())
    assert abs(mean - float(x[0])) < 2e-5 and 1.0 < mean

    # fp16 weights with fp16 Adam state (accum_type=float16): the IPU computes the update in fp32, so Adam's eps does
    # not vanish and a zero gradient leaves the weight alone (plain fp16 arithmetic gives 0/0 = NaN there)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1).half()
    opt = poptorch.optim.AdamW(model.parameters(), lr=0.01, accum_type=torch.float16, loss_scaling=1024)
    opts = poptorch.Options()
    opts.Precision.enableStochasticRounding(True)
    poptorch.trainingModel(torch.nn.Identity(), options=opts, optimizer=opt)
    assert opt.stochastic_rounding and not poptorch.Options().Precision.stochastic_rounding
    x, y = torch.randn(64, 4).half(), torch.zeros(64, 1).half()
    x[:, 0] = 0  # the first weight's gradient is exactly zero
    losses = []
    for _ in range(30):
        loss = ((model(x).float() - y.float()) ** 2).mean()
        (loss * 1024).backward()
        opt.step()
        opt.zero_grad()
        losses.append(float(loss.detach()))
    assert all(torch.isfinite(p).all() for p in model.parameters()) and losses[-1] < 0.5 * losses[0]
    assert opt.state[model.weight]["exp_avg_sq"].dtype == torch.float16  # the state is stored in its accum type


def test_cstorch_gigagpt_shape_schedules_the_rate_and_reports_modelled_samples_per_second(tmp_path, monkeypatch,
                                                                                          capsys):
    out = in_process(tmp_path, monkeypatch, capsys, "cstorch_gpt.py")
    falls(out)
    assert "learning rate at the end 3.00e-04" in out  # warm-up to 3e-3 then cosine decay to 3e-4, closed form
    assert "Rate / GlobalRate are MODELLED samples/s" in out and "cerebras.pytorch.distributed" in out
    assert "cstorch.backends.csx.debug.execute_crd_memory_gi = 32 accepted" in out and "cluster_config=" in out
    assert any((tmp_path / "model_dir" / "train").iterdir())  # the SummaryWriter's log


def test_cstorch_cpu_backend_runs_the_scripts_cpu_path_measured_and_gpu_is_refused(tmp_path, monkeypatch, capsys):
    """gigaGPT's `backend: "CPU"`: the same script takes its CPU path (no half dtype), trains in fp32 on this CPU,
    and its report says the time was measured here and nothing was modelled."""
    from accelkit.facades import cerebras as cstorch
    from accelkit.vendor import run_script

    out = in_process(tmp_path, monkeypatch, capsys, "cstorch_gpt.py", "--backend", "CPU")
    first, last = falls(out)
    assert "backend is_cpu=True" in out and "Rate / GlobalRate are MODELLED" not in out
    assert "40 traced step(s) ran on this CPU" in out and "no Cerebras system was modelled" in out
    assert "cluster_config=" in out  # still recorded as a hardware-only option
    assert last < first
    # the CPU backend runs the model as plain PyTorch does, in fp32 even after a half dtype is set
    from accelkit.runtime import facade_log

    with facade_log.collecting():
        b = cstorch.backend("CPU")
        cstorch.amp.set_half_dtype("bfloat16")
        torch.manual_seed(0)
        model, x = torch.nn.Linear(8, 4), torch.randn(3, 8)
        compiled = cstorch.compile(model, b)
        step = cstorch.trace(lambda inp: compiled(inp))
        assert b.precision == "fp32" and torch.equal(step(x), model(x)) and b.cpu_steps == 1
        with pytest.raises(cstorch.CerebrasError, match="no modelled wafer"):
            b.report()
    with facade_log.collecting():  # entering clears the facades' state: the next test starts from nothing
        pass
    with pytest.raises(cstorch.CerebrasError, match="GPU backend runs on a CUDA device") as err:
        cstorch.backend("GPU")
    assert "'CPU'" in (err.value.fix or "")
    run = run_script(SCRIPTS / "cstorch_gpt.py", ["--backend", "GPU"], synthetic_data=True, quiet=True)
    assert run.exit_code == 1 and "GPU" in (run.error or "")


def test_cstorch_configure_optimizer_takes_the_model_zoo_config_keywords():
    import torch

    from accelkit.facades.cerebras import optim
    from accelkit.facades.cerebras.clock import CerebrasError

    params = [torch.nn.Parameter(torch.ones(2))]
    opt = optim.configure_optimizer("adamw", params, learning_rate=0.01, weight_decay=0.1, correct_bias=True)
    assert isinstance(opt, optim.AdamW) and opt.param_groups[0]["lr"] == 0.01
    assert opt.param_groups[0]["weight_decay"] == 0.1
    with pytest.raises(CerebrasError, match="no optimizer 'Lion'"):
        optim.configure_optimizer("Lion", params, learning_rate=0.01)
    with pytest.raises(CerebrasError, match="momentum"):
        optim.configure_optimizer("Adam", params, learning_rate=0.01, momentum=0.9)

    # the Model Zoo's learning_rate: a list of schedulers run one after another, each for its total_iters
    sched = optim.configure_lr_scheduler(opt, [
        {"scheduler": "Linear", "initial_learning_rate": 0.0, "end_learning_rate": 0.01, "total_iters": 4},
        {"scheduler": "CosineDecay", "initial_learning_rate": 0.01, "end_learning_rate": 0.001, "total_iters": 4}])
    rates = []
    for _ in range(9):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert rates[:5] == pytest.approx([0.0, 0.0025, 0.005, 0.0075, 0.01])  # warm-up, then the decay from its top
    assert rates[6] == pytest.approx(0.001 + 0.009 * 0.5 * (1 + math.cos(math.pi * 2 / 4)))
    assert rates[8] == pytest.approx(0.001)
    assert isinstance(optim.configure_lr_scheduler(opt, 0.003), optim.ConstantLR)
    with pytest.raises(CerebrasError, match="no scheduler 'exponential'"):
        optim.configure_lr_scheduler(opt, {"scheduler": "Exponential", "decay_rate": 0.5})


def test_torchvision_model_stand_ins_have_torchvisions_sizes_and_pretrained_is_random_and_said():
    from accelkit.vendor import synthetic, vision_models

    with synthetic.installed(hf=False):
        resnext = vision_models.resnext50_32x4d(pretrained=True, progress=True)  # Graphcore's available-memory demo
        said = synthetic.substitutions()
    assert sum(p.numel() for p in resnext.parameters()) == 25_028_904  # torchvision's resnext50_32x4d
    assert sum(p.numel() for p in vision_models.resnet18(num_classes=10).parameters()) == 11_181_642
    assert any("resnext50_32x4d(pretrained=True) is built with RANDOM weights" in s for s in said)
    # Groq's proof points load these through torch.hub: torchvision's parameter counts, its outputs
    sizes = {"mobilenet_v2": 3_504_872, "squeezenet1_0": 1_248_424, "squeezenet1_1": 1_235_496,
             "googlenet": 13_004_888}
    for name, size in sizes.items():
        model = getattr(vision_models, name)().eval()
        assert sum(p.numel() for p in model.parameters()) == size, name
        assert model(torch.randn(1, 3, 224, 224)).shape == (1, 1000), name
    trained = vision_models.googlenet(pretrained=True)  # as torchvision: no auxiliary heads, transform_input
    assert sum(p.numel() for p in trained.parameters()) == 6_624_904 and trained.transform_input
    step = vision_models.googlenet().train()(torch.randn(2, 3, 224, 224))
    assert type(step).__name__ == "GoogLeNetOutputs" and step.aux_logits1.shape == (2, 1000)


def test_launcher_runs_a_script_as_python_does_from_a_clone_of_the_vendors_repository(tmp_path, monkeypatch, capsys):
    import sys as _sys

    from accelkit.vendor import run_script

    (tmp_path / "groqflow").mkdir()  # the clone's own SDK sources, beside its examples/
    (tmp_path / "groqflow" / "__init__.py").write_text("raise ImportError('the clone of groqflow was imported')\n")
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "hello.py").write_text(
        "import importlib.util\nimport groqflow\n"
        "print('facade', hasattr(groqflow, 'groqit'), importlib.util.find_spec('torch' + 'vision') is None)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # as `python -m` and the accelkit command put it there
    run = run_script(tmp_path / "examples" / "hello.py", synthetic_data=True)
    out = capsys.readouterr().out
    assert run.exit_code == 0, run.error
    assert "facade True True" in out  # not the clone's groqflow; no torchvision stand-in for a script without it
    assert str(tmp_path) in _sys.path  # the launcher's caller gets its path back


def test_tiktoken_stand_in_is_byte_level_keeps_gpt2s_special_id_and_refuses_it_inside_text():
    from accelkit.vendor import bpe

    enc = bpe.get_encoding("gpt2")
    assert (enc.eot_token, enc.n_vocab) == (50256, 50257)  # the real encoding's, so a GPT-2-sized model takes them
    for text in ("The wafer streams weights layer by layer.", "naïve café ✓ 日本", " two  spaces\n\ttab", ""):
        ids = enc.encode(text)
        assert enc.decode(ids) == text and all(0 <= i < bpe.MERGED_TOKENS for i in ids)  # any text, exactly back
    common = enc.encode("the compiler places the graph on the chip")
    assert len(common) < len("the compiler places the graph on the chip") / 2  # merges learned: not one per byte
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode("end<|endoftext|>")
    assert enc.encode("a<|endoftext|>b", allowed_special="all") == [*enc.encode("a"), 50256, *enc.encode("b")]
    assert enc.decode([*enc.encode("ok"), 40000]) == "ok\ufffd"  # an id the local vocabulary lacks
    with pytest.raises(KeyError):
        enc.decode([60000])  # outside GPT-2's vocabulary altogether
    assert bpe.encoding_for_model("gpt-4").name == "cl100k_base"
    with pytest.raises(AccelkitError, match="no encoding named"):
        bpe.get_encoding("gpt3")


def test_cstorch_sample_script_reads_prompts_with_tiktoken_offline(tmp_path, monkeypatch, capsys):
    import io

    import torch

    if importlib.util.find_spec("tiktoken") is not None:
        pytest.skip("tiktoken is installed: its encodings are a download, and the stand-in steps aside")
    torch.manual_seed(1)
    width, vocab = 8, 50257
    torch.save({"model_config": {"vocab_size": vocab, "width": width},
                "model": {"wte.weight": torch.randn(vocab, width), "lm_head.weight": torch.randn(vocab, width)}},
               tmp_path / "checkpoint.mdl")
    monkeypatch.setattr("sys.stdin", io.StringIO("Streaming weights through the wafer\n\n"))
    out = in_process(tmp_path, monkeypatch, capsys, "cstorch_sample.py", "--checkpoint_path", "checkpoint.mdl",
                     "--max_length", "16")
    assert "tiktoken.get_encoding('gpt2') is a byte-level BPE built on this machine" in out
    response = re.search(r"Response: (.*)", out).group(1)
    assert response.startswith("Streaming weights through the wafer")  # the prompt's ids decode back exactly
    n = int(re.search(r"Prompt tokens: (\d+)", out).group(1))
    assert 0 < n < len("Streaming weights through the wafer")
    assert "tiktoken" not in sys.modules  # answered for the run only


def test_poptorch_loader_with_a_combined_batch_beyond_the_stand_in_grows_it_to_mnists_size_and_destroy_frees():
    from accelkit import poptorch
    from accelkit.vendor import synthetic

    with synthetic.installed(hf=False, vision=True):
        import torchvision  # the stand-in where torchvision is not installed, the real one's classes swapped in

        tf = torchvision.transforms.Compose([torchvision.transforms.ToTensor()])
        test = torchvision.datasets.MNIST("~/.torch/datasets", train=False, download=True, transform=tf)
        opts = poptorch.Options().deviceIterations(100)  # the pipelining tutorial's test loader: 8 x 100 a batch
        loader = poptorch.DataLoader(opts, test, batch_size=8, drop_last=True)
        assert len(test) == 10000 and len(loader) == 12  # MNIST's test size, not zero batches of 800 from 500
        said = synthetic.substitutions()
    assert any("grows to the real dataset's 10000" in s for s in said)
    base, repeat = test[3], test[503]
    assert base[1] == repeat[1] and not torch.equal(base[0], repeat[0])  # the same digit, shifted
    with pytest.raises(IndexError):
        test[10000]

    model = poptorch.inferenceModel(torch.nn.Linear(4, 2))
    model.destroy()
    assert not model.isAttachedToDevice()
    with pytest.raises(poptorch.PopTorchError, match="destroyed"):
        model(torch.ones(1, 4))


def test_a_pytorch_error_in_a_poptorch_models_first_call_names_the_call_the_line_and_the_fix(tmp_path, capsys):
    from accelkit.vendor import run_script

    script = tmp_path / "wrong_shape.py"
    script.write_text("import poptorch, torch\nm = poptorch.inferenceModel(torch.nn.Linear(4, 2))\n"
                      "m(torch.ones(3, 5))\n")
    run = run_script(script, quiet=True)
    err = capsys.readouterr().err
    assert run.exit_code == 1 and "Traceback" not in err
    assert f"{script}:3: m(torch.ones(3, 5))" in run.error
    assert "poptorch.inferenceModel(Linear)(...) failed: RuntimeError: mat1 and mat2" in run.error


def test_mnist_idx_files_are_written_in_the_format_a_tutorials_own_reader_expects(tmp_path, capsys):
    import struct

    import numpy as np

    from accelkit.vendor import idx, synthetic

    assert idx.main([str(tmp_path / "fashion-mnist")]) == 0  # python -m accelkit.vendor.idx DIR
    assert capsys.readouterr().out.count("wrote ") == 4
    for train, (images_name, labels_name) in idx.FILES.items():
        images = (tmp_path / "fashion-mnist" / images_name).read_bytes()
        labels = (tmp_path / "fashion-mnist" / labels_name).read_bytes()
        magic, n, rows, cols = struct.unpack(">IIII", images[:16])
        assert (magic, rows, cols) == (2051, 28, 28) and struct.unpack(">II", labels[:8]) == (2049, n)
        assert n == (synthetic.TRAIN_SAMPLES if train else synthetic.TEST_SAMPLES)
        pixels = np.frombuffer(images[16:], dtype=np.uint8).reshape(n, 28, 28)
        want_images, want_labels = synthetic._digit_images(n, 0 if train else 1, 28)
        assert np.array_equal(pixels, want_images) and np.array_equal(np.frombuffer(labels[8:], np.uint8), want_labels)
        assert set(np.unique(want_labels)) == set(range(10))


def test_hf_datasets_stand_in_has_the_real_columns_answers_inside_the_context_and_real_metric_values():
    from accelkit.vendor import hf_datasets as hd

    sst2 = hd.load_dataset("glue", "sst2")
    assert set(sst2) == {"train", "validation", "test"} and sst2["train"].column_names == ["sentence", "label", "idx"]
    rows = sst2["train"]
    assert {r["label"] for r in rows} == {0, 1}
    positive = [r["sentence"] for r in rows if r["label"] == 1]
    assert all(any(p in s for p in hd.POSITIVE) for s in positive)  # the label is what the sentence says
    assert hd.load_dataset("imdb", split="test").column_names == ["text", "label"]
    full = hd.load_dataset("squad")  # SQuAD at its real size: a tutorial's row 10,016 exists
    assert (len(full["train"]), len(full["validation"])) == (87599, 10570) and full["train"][10016]["id"]
    squad = hd.load_dataset("squad", split="validation[:20]")
    assert len(squad) == 20
    with pytest.raises(IndexError, match="stand-in: 20 rows") as err:  # Graphcore's SQuAD tutorial shows row 10016
        squad[10016]
    assert isinstance(err.value, hd.DatasetsError) and "len(dataset)" in (err.value.fix or "")
    for r in squad:
        start, text = r["answers"]["answer_start"][0], r["answers"]["text"][0]
        assert r["context"][start:start + len(text)] == text
    mapped = rows.map(lambda b: {"n": [len(s) for s in b["sentence"]]}, batched=True, batch_size=100,
                      remove_columns=["idx"])
    assert mapped.column_names == ["sentence", "label", "n"] and mapped["n"][3] == len(rows[3]["sentence"])
    assert len(rows.filter(lambda r: r["label"] == 1)) == len(positive)
    split = rows.train_test_split(test_size=0.25, seed=0)
    assert (len(split["train"]), len(split["test"])) == (384, 128)
    with pytest.raises(hd.DatasetsError, match="no stand-in for load_dataset"):
        hd.load_dataset("c4", "en")

    assert hd.load_metric("accuracy").compute(predictions=[1, 0, 1, 1], references=[1, 1, 1, 0]) == {"accuracy": 0.5}
    f1 = hd.load_metric("f1").compute(predictions=[1, 0, 1, 1], references=[1, 1, 1, 0])["f1"]
    assert f1 == pytest.approx(2 / 3)  # precision 2/3, recall 2/3
    squad_metric = hd.load_metric("squad")
    got = squad_metric.compute(predictions=[{"id": "a", "prediction_text": "The wafer"},
                                            {"id": "b", "prediction_text": "streams weights"}],
                               references=[{"id": "a", "answers": {"text": ["wafer"], "answer_start": [0]}},
                                           {"id": "b", "answers": {"text": ["weights"], "answer_start": [0]}}])
    assert got == pytest.approx({"exact_match": 50.0, "f1": 100 * (1 + 2 / 3) / 2})  # articles dropped; 2 tokens vs 1


def test_poptorch_text_classification_with_hub_data_tokenizer_and_metric_offline(tmp_path, monkeypatch, capsys):
    pytest.importorskip("transformers")
    out = in_process(tmp_path, monkeypatch, capsys, "poptorch_sst2.py", "--epochs", "1", "--device-iterations", "8")
    falls(out)
    assert float(re.search(r"validation accuracy (\d\.\d+)", out).group(1)) > 0.7  # the labels can be learned
    assert "load_dataset('glue', 'sst2') is 512 / 128 / 128 rows (train, validation, test)" in out \
        and "load_metric('accuracy')" in out
    columns = re.search(r"train rows 512, columns (\[.*\])", out).group(1)  # map's columns, the text ones removed
    assert "'label'" in columns and "'input_ids'" in columns and "'sentence'" not in columns
    assert "evaluate" not in sys.modules or hasattr(sys.modules["evaluate"], "__file__")  # answered for the run only


def test_samba_inference_compile_without_a_name_takes_the_pef_name_else_the_models(tmp_path):
    from accelkit import samba

    model = torch.nn.Linear(4, 2)
    samba.from_torch_model_(model)
    x = samba.randn(2, 4, name="x", batch_dim=0)
    samba.session.app_args = None  # no command line parsed: the model's class names the PEF
    samba.session.compile(model, [x], app_dir=str(tmp_path), verbose=False)  # generative_inference.py's call
    assert (tmp_path / "out" / "Linear" / "Linear.pef" / "manifest.json").is_file()


def test_poptorch_fp16_adamw_update_is_the_fp32_update_stored_once_in_buffers_kept_between_steps():
    """--optimizer-half's AdamW on fp16 weights: each update is PyTorch's AdamW in fp32 on the unscaled gradient,
    stored to fp16 once (the state x loss_scaling); the fp32 copies are buffers kept from step to step, not new
    tensors (a large layer's fresh copies cost more than its update on this CPU)."""
    from accelkit import poptorch

    torch.manual_seed(0)
    layer = torch.nn.Linear(64, 8).half()
    opt = poptorch.optim.AdamW(layer.parameters(), lr=0.01, accum_type=torch.float16, loss_scaling=1024)
    w0 = layer.weight.detach().float().clone()
    (layer(torch.randn(16, 64).half()).float().pow(2).mean() * 1024).backward()
    grad = layer.weight.grad.float() / 1024
    ref = torch.nn.Parameter(w0.clone())
    ref.grad = grad
    ref_opt = torch.optim.AdamW([ref], lr=0.01)
    ref_opt.step()
    opt.step()
    assert layer.weight.dtype == torch.float16 and layer.weight.grad.dtype == torch.float16
    assert torch.allclose(layer.weight.float(), ref.detach().half().float(), rtol=2 ** -10, atol=0)
    state = opt.state[layer.weight]
    assert state["exp_avg_sq"].dtype == torch.float16  # stored x 1024^2 in fp16, not underflowed
    assert torch.allclose(state["exp_avg_sq"].float() / 1024 ** 2, ref_opt.state[ref]["exp_avg_sq"], rtol=2e-3,
                          atol=0)
    buffers = {k: t.data_ptr() for k, t in opt._wide_buffers[id(layer.weight)].items()}
    for _ in range(2):
        layer(torch.randn(16, 64).half()).float().sum().backward()
        opt.step()
        opt.zero_grad()
    assert {k: t.data_ptr() for k, t in opt._wide_buffers[id(layer.weight)].items()} == buffers


def test_poptorch_fp16_weights_with_fp16_adam_state_and_loss_scaling_train_instead_of_diverging():
    # the mixed-precision walkthrough's --execution-half --optimizer-half: model.half(), AdamW(accum_type=fp16,
    # loss_scaling=1024); Adam's squared fp16 gradients underflowed to zero unscaled and the loss went to NaN
    from accelkit import poptorch
    from accelkit.vendor import synthetic

    torch.manual_seed(0)
    x, y = synthetic._digit_images(480, 0, 12)
    x = ((torch.from_numpy(x).float() / 255 - 0.5) / 0.5)[:, None].half()
    y = torch.from_numpy(y)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.fc = torch.nn.Conv2d(1, 8, 3), torch.nn.Linear(8 * 10 * 10, 10)

        def forward(self, a, b):
            out = self.fc(torch.relu(self.conv(a)).flatten(1))
            return out, torch.nn.functional.cross_entropy(out.float(), b)

    model = Net().half()
    opt = poptorch.optim.AdamW(model.parameters(), lr=0.002, accum_type=torch.float16, loss_scaling=1024)
    training = poptorch.trainingModel(model, poptorch.Options(), optimizer=opt)
    losses = [float(training(x[i:i + 12], y[i:i + 12])[1]) for i in range(0, 480, 12)]
    assert all(math.isfinite(v) for v in losses) and sum(losses[-5:]) < 0.7 * sum(losses[:5])
    state = opt.state[model.fc.weight]
    assert state["exp_avg_sq"].dtype == torch.float16 and bool((state["exp_avg_sq"] > 0).any())  # not underflowed
    with torch.no_grad():
        accuracy = float((model(x, y)[0].float().argmax(1) == y).float().mean())
    assert accuracy > 0.6


def test_optimum_graphcore_is_answered_and_its_other_modules_refused_at_their_import_line(tmp_path):
    """Graphcore's Hugging Face tutorials (ViT) train with optimum.graphcore's IPUTrainer: its import is answered
    (IPUConfig, IPUTrainingArguments, IPUTrainer on the PopTorch facade: tests/test_optimum_graphcore.py); a module of
    optimum-graphcore accelkit does not simulate stops the script at its import line, naming the PopTorch loop to
    write instead; nothing after it runs."""
    from accelkit.vendor import run_script

    script = tmp_path / "vit_walkthrough.py"
    script.write_text("import torch\nimport optimum.graphcore as optimum_graphcore\n"
                      "print('after the import', optimum_graphcore.IPUConfig().ipus_per_replica)\n"
                      "from optimum.graphcore.pipelines import pipeline\nprint('after the pipelines')\n")
    run = run_script(script, [], synthetic_data=True, quiet=True)
    assert run.exit_code == 1 and "vit_walkthrough.py:4" in (run.error or "")
    assert "optimum.graphcore" in (run.error or "") and "poptorch.trainingModel" in (run.error or "")
    assert "after the import 1" in (run.output or "") and "after the pipelines" not in (run.output or "")
    assert "optimum.graphcore" in run.served
    assert "optimum" not in sys.modules and "optimum.graphcore" not in sys.modules  # gone after the run


IPU_KERAS = """import tensorflow as tf
from tensorflow import keras
from tensorflow.python import ipu

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()
print('after the import')
"""


@pytest.mark.parametrize("tensorflow", ["absent", "installed"])
def test_graphcores_tensorflow_for_the_ipu_is_refused_with_the_poptorch_script_to_run(tensorflow, tmp_path,
                                                                                     monkeypatch):
    """Graphcore's TensorFlow 2 tutorials (ALCF's 'MNIST - Tensorflow2') import tensorflow.python.ipu: not
    simulated, so the script stops at its import, where TensorFlow is installed (a stock TensorFlow has no ipu
    module) and where it is not (at `import tensorflow`), naming the PopTorch example to run instead."""
    from accelkit.vendor import run_script

    if tensorflow == "installed":  # a stock TensorFlow: a tensorflow.python package, without Graphcore's ipu
        pkg = tmp_path / "site" / "tensorflow"
        (pkg / "python").mkdir(parents=True)
        (pkg / "__init__.py").write_text("keras = None\n__version__ = '2.16.1'\n")
        (pkg / "python" / "__init__.py").write_text("")
        monkeypatch.syspath_prepend(str(tmp_path / "site"))
    script = tmp_path / "keras_mnist.py"
    script.write_text(IPU_KERAS)
    run = run_script(script, [], synthetic_data=True, quiet=True)
    line = "keras_mnist.py:1" if tensorflow == "absent" else "keras_mnist.py:3"
    assert run.exit_code == 1 and line in (run.error or ""), run.error
    assert "tensorflow.python.ipu (Graphcore's TensorFlow 2 for the IPU" in (run.error or "")
    assert "mnist_poptorch.py" in (run.error or "") and "poptorch.trainingModel" in (run.error or "")
    assert "after the import" not in (run.output or "")
    assert "tensorflow.python.ipu" not in sys.modules  # gone after the run
    for name in [n for n in sys.modules if n == "tensorflow" or n.startswith("tensorflow.")]:
        del sys.modules[name]  # the stock stand-in of this test


class _EditableFinder:
    """What `pip install -e demo_helpers` writes with setuptools 64 or later: an import hook mapping the package's
    name to the clone's folder, which is itself not put on the path."""

    def __init__(self, name, folder):
        self.name, self.folder = name, folder

    def find_spec(self, fullname, path=None, target=None):
        import importlib.util

        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.folder / "__init__.py",
                                                      submodule_search_locations=[str(self.folder)])


def test_a_helpers_package_installed_editable_gets_the_stand_ins_its_modules_import(tmp_path, monkeypatch, capsys):
    """GroqFlow's proof points (ALCF's `python minilmv2.py`) import demo_helpers, installed with `pip install -e`:
    its modules import Hugging Face's datasets, which --synthetic-data stands in for only where the script's own
    code imports it, so the launcher must find the package through the editable install's import hook."""
    from accelkit.vendor import _user_module_files, run_script

    helpers = tmp_path / "clone" / "tutorial_helpers" / "tutorial_helpers"
    helpers.mkdir(parents=True)
    (helpers / "__init__.py").write_text("")
    (helpers / "data.py").write_text("from datasets import load_dataset\n\n\ndef rows():\n"
                                      "    return len(load_dataset('glue', 'sst2')['validation'])\n")
    finder = _EditableFinder("tutorial_helpers", helpers)
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, finder])
    proof = tmp_path / "proof_points" / "sst"
    proof.mkdir(parents=True)
    (proof / "sst_point.py").write_text("from tutorial_helpers.data import rows\nprint('rows', rows())\n")
    run = run_script(proof / "sst_point.py", [], synthetic_data=True)
    out = capsys.readouterr().out
    assert run.exit_code == 0, f"{run.error}\n{out}"
    assert "rows 128" in out  # the stand-in's validation split
    for name in [n for n in sys.modules if n.startswith("tutorial_helpers")]:
        del sys.modules[name]
    # a package pip installed elsewhere (pip's --user site on the path) is not the script's own code
    user_site = tmp_path / "home" / ".local" / "lib" / "python3.11" / "site-packages"
    (user_site / "someones_lib").mkdir(parents=True)
    (user_site / "someones_lib" / "__init__.py").write_text("import torchvision\n")
    monkeypatch.syspath_prepend(str(user_site))
    assert _user_module_files("someones_lib", proof) == []


def test_groqflow_proof_point_with_its_helpers_on_the_path_runs_sst_on_chip_and_cpu(tmp_path, monkeypatch, capsys):
    """The shape of Groq's NLP proof points: helpers from a package on the path (they import datasets.utils and
    torchvision.ops, so the stand-ins must see them), torchscript=True tuples, state.expected_input_shapes,
    run_abunch, and compute_latency; the chip's predictions equal the CPU's."""
    monkeypatch.setenv("GROQFLOW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(SCRIPTS / "helpers"))
    out = in_process(tmp_path, monkeypatch, capsys, "groqflow_sst.py")
    assert "input names: ['input_ids', 'attention_mask']" in out
    assert "same predictions on the chip and the CPU: True" in out and "torchscript=True): the model returns tuples" in out
    assert float(re.search(r"on-chip latency (\d+\.\d+) ms", out).group(1)) > 0
    assert "boxes kept: [0, 2]" in out  # the second box overlaps the first (IoU 0.9): suppressed
    assert "load_dataset('sst')" in out  # the stand-in said what it made


def test_vision_ops_stand_ins_match_torchvisions_definitions_and_downloads_are_refused_by_name(tmp_path):
    from accelkit.vendor import hf_datasets, vision_ops

    b = torch.tensor([[10.0, 20.0, 4.0, 6.0]])  # cx, cy, w, h
    xyxy = vision_ops.box_convert(b, "cxcywh", "xyxy")
    assert xyxy.tolist() == [[8.0, 17.0, 12.0, 23.0]]
    assert torch.equal(vision_ops.box_convert(vision_ops.box_convert(xyxy, "xyxy", "xywh"), "xywh", "cxcywh"), b)
    boxes = torch.tensor([[0.0, 0, 10, 10], [1, 1, 11, 11], [0, 0, 10, 10], [50, 50, 60, 60]])
    # IoU(0, 1) = 81 / 119 = 0.68: kept at 0.7, suppressed at 0.5; box 2 equals box 0 (IoU 1)
    assert vision_ops.nms(boxes, torch.tensor([0.9, 0.8, 0.95, 0.1]), 0.7).tolist() == [2, 1, 3]
    assert vision_ops.nms(boxes, torch.tensor([0.9, 0.8, 0.95, 0.1]), 0.5).tolist() == [2, 3]
    import numpy as np
    from PIL import Image

    Image.fromarray(np.arange(24, dtype=np.uint8).reshape(2, 4, 3)).save(tmp_path / "x.png")
    rgb = vision_ops.read_image(tmp_path / "x.png")
    assert rgb.shape == (3, 2, 4) and rgb.dtype == torch.uint8 and rgb[:, 1, 2].tolist() == [18, 19, 20]
    assert vision_ops.read_image(tmp_path / "x.png", vision_ops.ImageReadMode.GRAY).shape == (1, 2, 4)
    with pytest.raises(vision_ops.VisionStandInError, match="ImageNet"):
        vision_ops.ImageNet("/data/imagenet", split="val")
    with pytest.raises(hf_datasets.DatasetsError, match="val2017.zip.*downloads a file") as err:
        hf_datasets.cached_path("http://images.cocodataset.org/zips/val2017.zip")
    assert "local path" in (err.value.fix or "")


IMAGENETTE_SHAPED = '''"""The shape of GroqFlow's computer-vision proof points (demo_helpers/dataset.py's ImagenetteDataset): Imagenette
fetched with cached_path and unpacked, ImageNet's devkit with wget, val read through torchvision's ImageNet with
the proof points' transforms, then a small CNN built for the TSP and run on chip and on the CPU."""
import os
import sys
import tarfile

import torch
import torchvision.transforms as T
from datasets.utils.file_utils import cached_path
from groqflow import groqit
from torch.utils.data import DataLoader
from torchvision.datasets import ImageNet

root = sys.argv[1]
tarfile_path = cached_path("https://s3.amazonaws.com/fast-ai-imageclas/imagenette2-320.tgz")
with tarfile.open(tarfile_path) as f:
    f.extractall(root)
import wget  # noqa: E402 - where the helpers import it

wget.download("https://image-net.org/data/ILSVRC/2012/ILSVRC2012_devkit_t12.tar.gz", out=os.path.join(root, "imagenette2-320"))
normalize = T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
images = ImageNet(root=os.path.join(root, "imagenette2-320"), split="val",
                  transform=T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), normalize]))
first = images[0][0]
print(f"val {len(images)} classes {len(images.classes)} first {images.classes[0][0]!r} shape {tuple(first.shape)}")
print(f"resized {T.Resize(256)(T.ToPILImage()(torch.zeros(3, 320, 426))).size}")
labels = [int(y) for _, y in DataLoader(images, batch_size=1)]
print(f"labels {sorted(set(labels))} each {labels.count(0)}")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 7, stride=8), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                            torch.nn.Flatten(), torch.nn.Linear(4, 10)).eval()
gmodel = groqit(model, {"input": first[None]}, build_name="imagenette_cnn")
modes = []  # the dispatch mode the convolution runs under (accelkit's fp32 partial sums, in an fp16 build)
model[0].register_forward_hook(lambda *_: modes.append(type(torch.utils._python_dispatch._get_current_dispatch_mode())))
out, ref = gmodel(input=first[None]), model(first[None])
print(f"on chip {out.dtype} close {torch.allclose(out.float(), ref, atol=2e-3, rtol=1e-2)} under {modes[0].__name__}")
'''


def test_groqflow_imagenette_helpers_read_a_generated_archive_through_imagenet_offline(tmp_path, monkeypatch):
    """GroqFlow's computer-vision proof points (ResNet-50 and the others) evaluate on Imagenette, which their demo
    helpers download: under --synthetic-data cached_path gives a generated archive of Imagenette's layout (ten
    WordNet-id folders), wget's ImageNet devkit a placeholder, and ImageNet reads the val folder as torchvision
    does; each said once. An fp16 build's convolutions sum in fp32 and round once, as the TSP's matrix units."""
    from accelkit.vendor import imagenette, run_script

    script = tmp_path / "imagenette_eval.py"
    script.write_text(IMAGENETTE_SHAPED)
    monkeypatch.setenv("GROQFLOW_CACHE_DIR", str(tmp_path / "groqflow-cache"))
    archives = set(Path(tempfile.gettempdir()).glob("accelkit-imagenette-*"))
    run = run_script(script, [str(tmp_path / "datasets")], synthetic_data=True, quiet=True, cwd=tmp_path)
    out = run.output or ""
    assert run.exit_code == 0, run.error
    n = imagenette.IMAGES_PER_CLASS
    assert f"val {10 * n} classes 10 first 'tench' shape (3, 224, 224)" in out
    assert "resized (340, 256)" in out  # Resize(int): the shorter side, the aspect kept (W, H), as torchvision
    assert f"labels {list(range(10))} each {n}" in out  # the class folders in sorted order: targets 0..9
    assert "on chip torch.float16 close True under FloatPartials" in out  # fp16 products, fp32 sums
    said = " ".join(run.substitutions)
    assert f"{n} generated images a class" in said and "not photographs" in said
    assert "ILSVRC2012_devkit_t12.tar.gz') is a placeholder" in said
    assert set(Path(tempfile.gettempdir()).glob("accelkit-imagenette-*")) == archives  # the archive is removed after
    assert (tmp_path / "datasets/imagenette2-320" / imagenette.MARKER).is_file()  # said to be made here
    assert "wget" not in sys.modules or getattr(sys.modules["wget"], "__accelkit_facade__", None) is None

    from accelkit.facades.poptorch.partials import FloatPartials  # what an fp16 GroqModel call runs under
    x, w = torch.randn(1, 3, 16, 16).half(), torch.randn(4, 3, 3, 3).half()
    with FloatPartials():
        got = torch.nn.functional.conv2d(x, w)
    assert torch.equal(got, torch.nn.functional.conv2d(x.float(), w.float()).half())



def test_torch_hub_load_of_torchvision_is_answered_offline_and_other_downloads_are_refused_by_name(tmp_path):
    """GroqFlow's computer-vision proof points load torchvision's models through torch.hub: under --synthetic-data
    the model is built here (random weights, said once); another repository or a URL is refused, naming it."""
    from accelkit.vendor import run_script, torch_hub

    script = tmp_path / "hub_classifier.py"
    script.write_text("import torch\n"
                      "model = torch.hub.load('pytorch/vision:v0.10.0', 'resnet18', weights='ResNet18_Weights.DEFAULT')\n"
                      "print('parameters', sum(p.numel() for p in model.eval().parameters()))\n"
                      "print('logits', tuple(model(torch.ones(1, 3, 32, 32)).shape))\n"
                      "torch.hub.load('facebookresearch/dino:main', 'dino_vits16')\n")
    real_load = torch.hub.load
    run = run_script(script, synthetic_data=True, quiet=True)
    assert "parameters 11689512" in (run.output or "")  # torchvision's resnet18, 1000 classes
    assert "logits (1, 1000)" in (run.output or "")
    assert any("torch.hub.load('pytorch/vision:v0.10.0', 'resnet18') is torchvision.models.resnet18 built here" in s
               for s in run.substitutions)
    assert any("RANDOM weights" in s for s in run.substitutions)
    assert run.exit_code == 1 and "hub_classifier.py:5" in (run.error or "")  # the other repository: its line
    assert "facebookresearch/dino's hubconf.py" in (run.error or "") and "source='local'" in (run.error or "")
    assert torch.hub.load is real_load  # PyTorch's own again after the run

    with torch_hub.installed():
        with pytest.raises(torch_hub.HubError, match="(?s)no 'vgg11'.*use one of .*resnet50"):
            torch.hub.load("pytorch/vision", "vgg11")
        with pytest.raises(torch_hub.HubError, match="https://example.org/w.pth"):
            torch.hub.load_state_dict_from_url("https://example.org/w.pth")


def test_speech_commands_stand_in_has_the_real_words_and_clip_shapes_and_is_said(tmp_path):
    """GroqFlow's M5 keyword-spotting proof point reads Speech Commands through torchaudio: where torchaudio is not
    installed, --synthetic-data answers it with generated clips of the real 35 words, at most a second at 16 kHz."""
    from accelkit.vendor import run_script

    if importlib.util.find_spec("torchaudio") is not None:
        pytest.skip("torchaudio is installed: its sets are a download, and the stand-in steps aside")
    script = tmp_path / "keywords.py"
    script.write_text(
        "import torch\nimport torchaudio\n"
        "data = torchaudio.datasets.SPEECHCOMMANDS('./data', download=True, subset='testing')\n"
        "clips = list(data)\n"
        "labels = sorted(set(d[2] for d in clips))\n"
        "print('clips', len(data), 'labels', len(labels), labels[:3], 'rate', clips[0][1])\n"
        "print('longest', max(d[0].shape[-1] for d in clips), 'shortest', min(d[0].shape[-1] for d in clips))\n"
        "peak = [int(torch.fft.rfft(clips[i][0][0, :12000]).abs().argmax()) for i in (0, 1, 10)]\n"
        "print('same word same tone', peak[0] == peak[1], 'other word other tone', peak[0] != peak[2])\n")
    run = run_script(script, synthetic_data=True, quiet=True, cwd=tmp_path)
    out = run.output or ""
    assert run.exit_code == 0, run.error
    assert "clips 350 labels 35 ['backward', 'bed', 'bird'] rate 16000" in out
    longest, shortest = map(int, re.search(r"longest (\d+) shortest (\d+)", out).groups())
    assert longest == 16000 and 12000 <= shortest < 16000  # padded to one second, as the proof point pads
    assert "same word same tone True other word other tone True" in out
    assert any("SPEECHCOMMANDS(subset='testing') is 350 generated clips" in s and "not speech" in s
               for s in run.substitutions)
    assert "torchaudio" not in sys.modules  # answered for the run only


ZOO_SHAPED_RUNNER = '''"""A training run in the shape of the 2.0 Model Zoo's runner (run_cstorch_flow.py), on its CPU or CSX path."""
import sys

import cerebras_pytorch as cstorch
import torch
from cerebras_appliance.errors import ApplianceNanError
from cerebras_appliance.run_utils import get_debug_args
from cerebras_pytorch.core import modes
from cerebras_pytorch.utils.nest import visit_torch_tensors

runconfig = {"mode": modes.TRAIN, "num_epochs": 2, "steps_per_epoch": 30, "max_steps": 50, "checkpoint_steps": 20}
cstorch.manual_seed(1)
debug_args = get_debug_args(None)
debug_args.debug_usr.worker_resource.memory_bytes = 4 << 30
cs_config = cstorch.utils.CSConfig(num_csx=1, max_wgt_servers=2, debug_args=debug_args)
backend = cstorch.backend(sys.argv[1], max_checkpoints=3, mixed_precision=True)
with backend.device:
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
compiled = cstorch.compile(model, backend)
compiled.train()
groups = cstorch.optim.configure_param_groups(model, {"learning_rate": 0.1})
optimizer = cstorch.optim.configure_optimizer(optimizer_type="SGD", params=groups, learning_rate=0.1, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()


def input_fn(params):
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 4, (96,), generator=g)
    x = torch.nn.functional.one_hot(y, 16).float().reshape(96, 4, 4) + 0.1 * torch.randn(96, 4, 4, generator=g)
    if cstorch.use_cs():  # as the Model Zoo's loaders shape a batch for the system: float16 inputs, int32 labels
        x, y = x.half(), y.int()
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=params["batch_size"])


dataloader = cstorch.utils.data.DataLoader(input_fn, {"batch_size": 8})
num_steps = cstorch.utils.data.compute_num_steps(dataloader, initial_step=0, num_epochs=runconfig["num_epochs"],
                                                 steps_per_epoch=runconfig["steps_per_epoch"],
                                                 max_steps=runconfig["max_steps"])
writer = cstorch.utils.tensorboard.SummaryWriter(log_dir="model_dir/train", base_step=1)
executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=num_steps,
                                           checkpoint_steps=runconfig["checkpoint_steps"], cs_config=cs_config)


@cstorch.trace
def training_step(batch):
    inputs, labels = batch
    loss = loss_fn(compiled(inputs), labels)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


losses = []


@cstorch.step_closure
def post_training_step(loss):
    if torch.isnan(loss).any().item():
        raise ApplianceNanError("NaN loss")
    losses.append(loss.item())


@cstorch.checkpoint_closure
def save_checkpoint(step):
    cstorch.save({"model": model.state_dict(), "global_step": step}, f"model_dir/checkpoint_{step}.mdl")


for step, batch in enumerate(executor, start=1):
    post_training_step(training_step(batch))
    save_checkpoint(step)
print(f"device {backend.device}, is_csx {backend.is_csx}, use_cs {cstorch.use_cs()}, steps {num_steps}")
print(f"batch {batch[0].dtype} {batch[1].dtype}, weights {next(model.parameters()).dtype}")
print(f"loss dtype bf16-exact {all(torch.tensor(v).bfloat16().item() == v for v in losses)}")
print(f"samples {executor.profiler.total_samples()}, batch size {dataloader.batch_size}")
print(f"tensors {[(scope, tuple(t.shape)) for scope, t in visit_torch_tensors({'a': [torch.ones(2)]})]}")
print(f"first loss {sum(losses[:5]) / 5:.4f} last loss {sum(losses[-5:]) / 5:.4f}")
'''


def test_cstorch_2_0_model_zoo_runner_shape_trains_on_its_cpu_path_with_the_appliance_settings_recorded(tmp_path):
    """What the 2.0 Model Zoo's runner asks of cerebras_pytorch and the appliance client (its modes, debug settings,
    CSConfig, param groups, compute_num_steps, the loader's batch size, the profiler's totals, the CPU backend's
    mixed precision) answered, so `python run.py CPU --mode train --params ...` runs under accelkit vendor-run."""
    from accelkit.facades.cerebras import CerebrasError
    from accelkit.facades.cerebras.utils import compute_num_steps
    from accelkit.vendor import run_script

    script = tmp_path / "zoo_runner.py"
    script.write_text(ZOO_SHAPED_RUNNER)
    run = run_script(script, ["CPU"], quiet=True, cwd=tmp_path)
    out = run.output or ""
    assert run.exit_code == 0, run.error
    falls(out)
    assert "device CPU, is_csx False, use_cs False, steps 50" in out  # 2 epochs x 30, capped by max_steps
    assert "loss dtype bf16-exact True" in out  # mixed_precision=True on the CPU backend: bfloat16 autocast
    assert "samples 400, batch size 8" in out  # 50 batches of 8: the loader started again after 12
    assert "tensors [(['a', '0'], (2,))]" in out
    assert sorted(p.name for p in (tmp_path / "model_dir").glob("*.mdl")) == ["checkpoint_20.mdl",
                                                                            "checkpoint_40.mdl", "checkpoint_50.mdl"]
    recorded = " ".join(run.accepted)
    assert "CSConfig(max_wgt_servers=2)" in recorded and "debug_usr.worker_resource.memory_bytes = 4294967296" in recorded
    assert "cstorch.backend(max_checkpoints=3)" in recorded
    assert any("50 traced step(s) ran on this CPU" in text for _, text in run.reports)

    loader = list(range(12))
    assert compute_num_steps(loader, num_epochs=2) == 24  # an epoch: the loader's length
    assert compute_num_steps(loader, initial_step=30, max_steps=40) == 10
    assert compute_num_steps(loader, num_steps=8, grad_accum_steps=2) == 16  # batches: a step is 2 of them
    with pytest.raises(CerebrasError, match="both num_steps and num_epochs"):
        compute_num_steps(loader, num_steps=3, num_epochs=1)
    with pytest.raises(CerebrasError, match="0 steps"):
        compute_num_steps(loader, initial_step=40, max_steps=40, num_steps=5)

    # its CSX path: float16 inputs to the fp32 model and int32 labels, as the system takes them (mixed precision)
    run = run_script(script, ["CSX"], quiet=True, cwd=tmp_path)
    out = run.output or ""
    assert run.exit_code == 0, run.error
    falls(out)
    assert "device CSX, is_csx True, use_cs True, steps 50" in out
    assert "batch torch.float16 torch.int32, weights torch.float32" in out
    assert "the CSX program runs in mixed precision (fp16 arithmetic" in out
    (label, report), = run.reports
    assert label == "cstorch.compile(Sequential) on Backend('CSX': simulated CS-2, fp16)"  # told after the switch
    assert "fp16): 50 steps, 400 samples" in report and "MODELLED on wse2" in report


# the R1.7 / R1.9 Model Zoos' shape, written for these tests: the package finds the Cerebras software as the zoo does
# (modelzoo/__init__.py), imports the runtime as its common/pytorch/__init__.py does, and its runner asks cb_model
# where it runs, sizes its epochs from the loader's length and trains with extract_loss
ZOO_R1_PACKAGE = '''
import importlib.util
CSOFT = "SRC" if importlib.util.find_spec("cerebras.framework") is not None else "NONE"
'''
ZOO_R1_RUNTIME = {
    "1.7": '''
import cerebras.framework.torch as cbtorch
from cerebras.framework.torch import amp
from cerebras.framework.torch.core import cb_model, modes, name_scope
from cerebras.framework.torch.utils import extract_loss
from cerebras.pb.stack.autogen_pb2 import AP_DISABLED
''',
    "1.9": '''
import cerebras_pytorch as cbtorch
from cerebras_appliance.pb.stack.autogen_pb2 import AP_DISABLED
from cerebras_pytorch import amp
from cerebras_pytorch.core import cb_model, modes
from cerebras_pytorch.utils import extract_loss
name_scope = cbtorch.name_scope
assert cbtorch.utils.utils.is_ltc_mlir_mode_enabled() is False
'''}
ZOO_R1_RUN = '''
import argparse
import logging
import torch
from torchvision import datasets, transforms
from modelzoo import CSOFT
from modelzoo.common.pytorch import AP_DISABLED, amp, cb_model as cm, cbtorch, extract_loss, modes, name_scope

logging.basicConfig(level=logging.INFO, format="%(message)s")
parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=modes.get_modes())
parser.add_argument("--cs_ip")
parser.add_argument("--appliance", action="store_true")
args = parser.parse_args()
assert CSOFT == "SRC" and modes.is_valid(args.mode) and amp.get_init_params() == {}
torch.manual_seed(0)
if args.cs_ip or args.appliance:  # the CS-system path, as PyTorchBaseRunner.create starts it
    cbtorch.initialize(service_workdir="model_dir", compile_dir="model_dir", cs_ip=args.cs_ip, compile_only=False,
                       appliance=args.appliance, use_appliance_data=True, use_cbfloat16=False)
use_cs = cm.use_cs()
half = amp._amp_state.half_dtype if use_cs else torch.float32  # the loaders make 16-bit inputs for the system
data = datasets.MNIST("./mnist", train=True, download=True, transform=transforms.Compose(
    [transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,)), transforms.Lambda(lambda x: x.to(half))]),
    target_transform=(lambda y: torch.tensor(y, dtype=torch.int32)) if use_cs else None)
loader = torch.utils.data.DataLoader(data, batch_size=64, shuffle=True, drop_last=True)
steps_per_epoch = 200  # more than 2,000 generated digits allow: the runner checks it against the loader
assert steps_per_epoch <= len(loader), f"The requested steps per epoch of {steps_per_epoch} exceeds {len(loader)}"
net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
net.label = "digits"
model = cbtorch.module(net, cm.device()) if use_cs else net  # PyTorchBaseModel
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
scaler = None
if use_cs:
    optimizer = cbtorch.optimizer(optimizer)
    assert isinstance(optimizer, cbtorch.optim.Optimizer) and model.label == "digits"
    cbtorch.optim.lr_scheduler.Constant(optimizer, 0.1, None, False)  # the zoo's ConstantLR on the system
    scaler = amp.GradScaler(loss_scale=1.0, initial_loss_scale=None, steps_per_increase=None, min_loss_scale=None,
                            max_loss_scale=None, max_gradient_norm=None, mixed_precision=True)
    loader = cbtorch.dataloader(loader)
else:
    for group in optimizer.param_groups:
        group["lr"] = 0.1
session = cbtorch.Session(loader, modes.TRAIN) if use_cs else None  # PyTorchCSRunner.train
losses = []
with session if session is not None else name_scope("train"):
    for step, (x, y) in enumerate(loader):
        loss = extract_loss((torch.nn.functional.cross_entropy(model(cm.to_device(x, "cpu")), y),))
        with name_scope("optimizer"):
            optimizer.zero_grad()
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.unscale_(optimizer)
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
        losses.append(cm.to_cpu(loss).item())
        if use_cs and (step + 1) % 20 == 0:
            cm.print_update(cm.device(), cm.get_run_step(), loss.item(), modes.TRAIN)
        if step + 1 == 60:
            break
state = {"model": net.state_dict(), "optimizer": optimizer.state_dict(), "global_step": torch.tensor(60)}
if use_cs:
    cm.save(state, "model_dir/checkpoint_60.mdl", master_only=True,
            post_transfer_callback=lambda sd: {**sd, "optimizer": optimizer.convert_state_dict_for_checkpoint(
                sd["optimizer"])})
else:
    cbtorch.save(state, "model_dir/checkpoint_60.mdl")
assert cbtorch.load("model_dir/checkpoint_60.mdl")["global_step"] == 60  # the runner resumes from its checkpoints
print(f"use_cs {use_cs} master {cm.is_master_ordinal()} streamers {cm.num_streamers()} epoch {len(loader)} steps")
print(f"first loss {sum(losses[:5]) / 5:.4f} last loss {sum(losses[-5:]) / 5:.4f}")
'''


@pytest.mark.parametrize("release", ["1.7", "1.9"])
def test_r1_model_zoo_shape_trains_on_its_cpu_path_and_on_the_simulated_cs2(tmp_path, release):
    """The R1.x Model Zoo's runner imports the runtime as soon as cerebras.framework is found: answered as the
    runtime answers with no CS system (its README's CPU command runs, measured on this CPU, and the run says so);
    the torchvision stand-in takes MNIST's real size, since the runner sizes its epochs from the loader. R1.7's CS
    path (--cs_ip: PyTorchCSRunner) trains on the simulated CS-2 in mixed precision, its int32 labels taken by the
    loss, its log lines and report MODELLED; the appliance path stops with an error naming what runs instead."""
    from accelkit.vendor import run_script

    pkg = tmp_path / "modelzoo" / "common" / "pytorch"
    pkg.mkdir(parents=True)
    (tmp_path / "modelzoo" / "__init__.py").write_text(ZOO_R1_PACKAGE)
    (tmp_path / "modelzoo" / "common" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text(ZOO_R1_RUNTIME[release])
    (tmp_path / "run.py").write_text(ZOO_R1_RUN)
    run = run_script(tmp_path / "run.py", ["--mode", "train"], synthetic_data=True, quiet=True, cwd=tmp_path)
    out = run.output or ""
    assert run.exit_code == 0, run.error
    falls(out)
    assert "use_cs False master True streamers 1 epoch 937 steps" in out  # 60,000 images in batches of 64
    assert any("60000" in s for s in run.substitutions)
    assert any("no CS system given" in a and "nothing is modelled" in a for a in run.accepted)
    assert not run.reports  # the CPU path: nothing modelled

    if release == "1.7":
        run = run_script(tmp_path / "run.py", ["--mode", "train", "--cs_ip", "10.0.0.1:9000"], synthetic_data=True,
                         quiet=True, cwd=tmp_path)
        out = run.output or ""
        assert run.exit_code == 0, run.error
        falls(out)
        assert "use_cs True master True streamers 1 epoch 937 steps" in out
        assert "runs it in mixed precision (fp16 arithmetic" in out
        (label, report), = run.reports
        assert label == "cbtorch.Session (mode='train')" and "60 steps, 3840 samples" in report
        assert "MODELLED on wse2" in report and "fp16" in report
        assert any("cs_ip='10.0.0.1:9000'" in a for a in run.accepted)

    run = run_script(tmp_path / "run.py", ["--mode", "train", "--appliance"], synthetic_data=True, quiet=True,
                     cwd=tmp_path)
    assert run.exit_code != 0
    assert "R1.x Model Zoo's CS-system path" in (run.error or "") and "python run.py CSX" in (run.error or "")
    from accelkit.facades.cerebras import CerebrasError, cbtorch

    with pytest.raises(CerebrasError, match="Polynomial schedule runs inside the compiled step"):
        cbtorch.optim.lr_scheduler.Polynomial(None, 0.1, 0.0, 100, 1.0, False)  # named, with what runs instead


def test_poptorch_fp16_products_are_summed_in_fp32_partials_and_rounded_once_as_the_ipu_does():
    from torch.nn import functional as F  # noqa: N812
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    from accelkit import poptorch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.Flatten(), torch.nn.Linear(3 * 6 * 6, 4)).half()
    x = torch.randn(5, 2, 8, 8).half()
    out = poptorch.inferenceModel(model)(x)
    conv, fc = model[0], model[2]
    hidden = F.conv2d(x.float(), conv.weight.float(), conv.bias.float()).half()  # fp32 sums, one rounding
    assert torch.equal(out, F.linear(hidden.flatten(1).float(), fc.weight.float(), fc.bias.float()).half())
    assert out.dtype == torch.float16 and _get_current_dispatch_mode() is None  # only inside the call


def test_max_calls_stops_a_long_tutorial_after_its_first_calls_and_reports_them(tmp_path, capsys):
    """``--max-calls N`` stops a vendor script as it is about to make its call N+1 of a compiled model, whatever the
    script catches (``except Exception`` does not swallow the stop), and reports the N calls made; a run without it
    makes every call."""
    from accelkit.cli import main
    from accelkit.vendor import run_script

    script = tmp_path / "long_loop.py"
    script.write_text(
        "import poptorch, torch\n"
        "m = poptorch.inferenceModel(torch.nn.Linear(4, 2))\n"
        "done = 0\n"
        "for _ in range(50):\n"
        "    try:\n"
        "        m(torch.ones(8, 4))\n"
        "    except Exception:\n"
        "        pass\n"
        "    done += 1\n"
        "print('made', done)\n")
    run = run_script(script, quiet=True, max_calls=3)
    assert run.exit_code == 0 and "made" not in run.output
    assert "stopped at its call 4 (poptorch.inferenceModel(Linear)(...)), as --max-calls 3 asks" in run.stopped
    assert "stopped early, as asked" in run.summary() and "3 steps" in run.summary()
    whole = run_script(script, quiet=True)
    assert whole.output.strip().endswith("made 50") and not whole.stopped and "50 steps" in whole.summary()
    assert main(["vendor-run", "--max-calls", "2", str(script)]) == 0
    out = capsys.readouterr().out
    assert "as --max-calls 2 asks" in out and "2 steps" in out
    for bad in ("0", "two"):
        assert main(["vendor-run", "--max-calls", bad, str(script)]) == 2
        assert "not a number of calls" in capsys.readouterr().err
    from accelkit.errors import AccelkitError

    with pytest.raises(AccelkitError, match="max_calls"):
        run_script(script, quiet=True, max_calls=0)


def test_a_poptorch_dataloader_without_workers_says_what_it_adds_to_each_call(tmp_path):
    """A synchronous poptorch.DataLoader (no workers, DataLoaderMode.Sync) loads between the calls on an IPU system's
    host too: the run's report gives its load time MEASURED here and the rate with the modelled IPU time; a loader
    with workers overlaps the IPU and adds nothing."""
    from accelkit.vendor import run_script

    script = tmp_path / "loader.py"
    script.write_text(
        "import sys, time, poptorch, torch\n"
        "class Slow(torch.utils.data.Dataset):\n"
        "    def __len__(self): return 64\n"
        "    def __getitem__(self, i):\n"
        "        time.sleep(0.001)\n"
        "        return torch.randn(4), i % 2\n"
        "class Net(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__(); self.fc = torch.nn.Linear(4, 2)\n"
        "    def forward(self, x, y):\n"
        "        out = self.fc(x)\n"
        "        return out, torch.nn.functional.cross_entropy(out, y)\n"
        "opts = poptorch.Options().deviceIterations(2)\n"
        "loader = poptorch.DataLoader(opts, Slow(), batch_size=4, num_workers=int(sys.argv[1]))\n"
        "model = poptorch.trainingModel(Net(), opts, torch.optim.SGD(Net().parameters(), lr=0.1))\n"
        "for x, y in loader:\n"
        "    model(x, y)\n")
    sync = run_script(script, ["0"], quiet=True)
    assert sync.exit_code == 0, sync.error
    text = sync.summary()
    assert "poptorch.DataLoader has no workers (DataLoaderMode.Sync): this host loaded each batch of 8 in" in text
    assert "(MEASURED, median of 8)" in text and "samples/s with the modelled IPU time" in text
    ms = float(re.search(r"each batch of 8 in ([\d.]+) ms", text).group(1))
    assert ms >= 8.0  # eight samples, each asleep for a millisecond
    workers = run_script(script, ["2"], quiet=True)
    assert workers.exit_code == 0 and "has no workers" not in workers.summary()


def test_a_package_the_stand_ins_answer_names_synthetic_data_as_the_fix(tmp_path, monkeypatch, capsys):
    """Run without --synthetic-data, a tutorial that imports torchvision (SambaNova's logreg does, first thing) is
    told which line failed and how to run it, not shown Python's traceback; another missing package keeps it."""
    import importlib.util

    from accelkit.vendor import run_script

    if importlib.util.find_spec("torchvision") is not None:
        pytest.skip("torchvision is installed here: nothing is missing")
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "uses_vision.py"
    script.write_text("import sys\nimport torchvision\nprint('unreachable')\n")
    run = run_script(script, (), synthetic_data=False)
    err = capsys.readouterr().err
    assert run.exit_code == 1 and "unreachable" not in err
    assert f"error at {script}:2: import torchvision" in err and "torchvision is not installed here" in err
    assert "--synthetic-data" in err and "Traceback" not in err
    # with it, the stand-in answers the same import
    assert run_script(script, (), synthetic_data=True).exit_code == 0
    other = tmp_path / "uses_other.py"
    other.write_text("import accelkit_no_such_package\n")
    run = run_script(other, (), synthetic_data=False)
    err = capsys.readouterr().err
    assert run.exit_code == 1 and "Traceback" in err and "--synthetic-data" not in err
    # a requirements file beside the script that lists it (Graphcore's octconv example: octconv==0.1.0) gives the install
    (tmp_path / "requirements.txt").write_text("torchvision==0.14.0\nAccelkit-No_Such.Package==0.1.0  # the op\n")
    run = run_script(other, (), synthetic_data=False)
    err = capsys.readouterr().err
    assert run.exit_code == 1 and "Traceback" not in err and f"error at {other}:1:" in err
    assert "pip install 'Accelkit-No_Such.Package==0.1.0'" in err
    # or one in the folder above, which a set of tutorials shares (Graphcore's PyTorch Geometric tutorials: py3Dmol)
    (tmp_path / "requirements.txt").unlink()
    tutorial = tmp_path / "3_padding"
    tutorial.mkdir()
    (tmp_path / "requirements.txt").write_text("py3Dmol==1.8.1\naccelkit_no_such_package==2.0\n")
    moved = tutorial / "uses_other.py"
    moved.write_text(other.read_text())
    run = run_script(moved, (), synthetic_data=False)
    err = capsys.readouterr().err
    assert run.exit_code == 1 and "Traceback" not in err and f"{tmp_path.name}/requirements.txt lists it" in err
    assert "pip install 'accelkit_no_such_package==2.0'" in err


def test_mnist_idx_files_missing_name_the_command_that_writes_them(tmp_path, monkeypatch, capsys):
    """A tutorial that reads MNIST's IDX files from its --data-dir (SambaNova's lenet) where the README's wget step
    has not run is told the command that writes them offline; after it, the same command line reads them."""
    from accelkit.vendor import run_script

    monkeypatch.chdir(tmp_path)
    data = tmp_path / "datasets"
    script = tmp_path / "reads_idx.py"
    script.write_text("import sys, pathlib, struct\n"
                      "raw = (pathlib.Path(sys.argv[1]) / 'train-images-idx3-ubyte').read_bytes()\n"
                      "print('images', struct.unpack('>IIII', raw[:16])[1])\n")
    run = run_script(script, (str(data),), synthetic_data=True)
    err = capsys.readouterr().err
    assert run.exit_code == 1 and "Traceback" not in err
    assert f"error at {script}:2:" in err and f"python -m accelkit.vendor.idx {data}" in err
    from accelkit.vendor.idx import main

    assert main([str(data)]) == 0
    assert run_script(script, (str(data),), synthetic_data=True).exit_code == 0
    assert "images 2000" in capsys.readouterr().out
    # another missing file keeps Python's own report
    other = tmp_path / "reads_other.py"
    other.write_text("open('no-such-file.txt')\n")
    assert run_script(other, (), synthetic_data=True).exit_code == 1
    assert "Traceback" in capsys.readouterr().err


def test_a_package_made_before_numpy_2_and_a_module_of_another_distribution_name_the_install(tmp_path, monkeypatch,
                                                                                               capsys):
    """PyTorch Lightning 1.9 (Graphcore's shakespeare-rnn example) calls ``np.Inf``, which NumPy 2 removed: the run
    names the package and the install that runs it, not a traceback; ``pkg_resources``, which its utilities import,
    is looked up in the requirements file by its distribution's name (setuptools)."""
    from accelkit.vendor import run_script

    monkeypatch.chdir(tmp_path)
    (tmp_path / "oldlib").mkdir()
    (tmp_path / "oldlib" / "__init__.py").write_text("import numpy as np\n\n\ndef infinity():\n    return np.Inf\n")
    script = tmp_path / "train.py"
    script.write_text("import oldlib\n\nprint(oldlib.infinity())\n")
    run = run_script(script, (), synthetic_data=False)
    err = capsys.readouterr().err
    if hasattr(__import__("numpy"), "Inf"):
        pytest.skip("NumPy 1 here: np.Inf still exists")
    assert run.exit_code == 1 and "Traceback" not in err
    assert f"error at {script}:3:" in err and "oldlib predates NumPy 2" in err and "pip install 'numpy<2'" in err
    # another AttributeError keeps Python's own report
    (tmp_path / "other.py").write_text("import numpy as np\n\nnp.no_such_name_here\n")
    assert run_script(tmp_path / "other.py", (), synthetic_data=False).exit_code == 1
    assert "Traceback" in capsys.readouterr().err
    # an import of pkg_resources that fails, as lightning_utilities' does where setuptools is missing
    (tmp_path / "requirements.txt").write_text("setuptools==58.0.4\npytorch_lightning==1.9.0\n")
    needs = tmp_path / "needs_setuptools.py"
    needs.write_text("raise ModuleNotFoundError(\"No module named 'pkg_resources'\", name='pkg_resources')\n")
    assert run_script(needs, (), synthetic_data=False).exit_code == 1
    err = capsys.readouterr().err
    assert "pkg_resources (part of setuptools) is not installed here" in err
    assert "pip install 'setuptools==58.0.4'" in err and "Traceback" not in err


def test_groq_proof_point_shapes_torchscript_vit_minilm_and_datasets_logging(tmp_path, monkeypatch, capsys):
    """What Groq's proof points call beyond the examples: a ViT loaded with ``torchscript=True`` returns a tuple and
    its build captures (DeiT's proof point: a config with ``return_dict=False`` broke ViT's own forward); a
    ``GroqModel`` hands back its graph's tensors, one tensor for one output, as GroqFlow unpacks them (the
    quantization proof point concatenated them); ``sentence-transformers/all-MiniLM-L6-v2`` is a BERT encoder;
    ``datasets.logging`` has its verbosity switches."""
    from accelkit.vendor import run_script

    monkeypatch.chdir(tmp_path)
    script = tmp_path / "proof_point.py"
    script.write_text(
        "import torch\n"
        "from datasets import logging\n"
        "from groqflow import groqit\n"
        "from transformers import AutoModel, ViTForImageClassification\n"
        "logging.set_verbosity(logging.ERROR)\n"
        "print('datasets verbosity', logging.get_verbosity() == logging.ERROR)\n"
        "vit = ViTForImageClassification.from_pretrained('facebook/deit-tiny-patch16-224', torchscript=True).eval()\n"
        "x = torch.randn(1, 3, 224, 224)\n"
        "out = vit(pixel_values=x)\n"
        "print('vit returns', type(out).__name__, len(out))\n"
        "g = groqit(vit, {'pixel_values': x}, build_name='deit_shape', cache_dir='cache')\n"
        "y = g(pixel_values=x)\n"
        "print('groq returns', type(y).__name__, tuple(y.shape), torch.allclose(y.float(), out[0], atol=2e-2))\n"
        "enc = AutoModel.from_pretrained('sentence-transformers/all-MiniLM-L6-v2')\n"
        "print('minilm is', type(enc).__name__)\n"
        "ids = torch.ones(1, 8, dtype=torch.long)\n"
        "h = groqit(enc, {'input_ids': ids, 'attention_mask': ids}, build_name='minilm_shape', cache_dir='cache')\n"
        "z = h(input_ids=ids, attention_mask=ids)\n"
        "print('two outputs', type(z).__name__, len(z))\n")
    run = run_script(script, (), synthetic_data=True)
    out = capsys.readouterr().out
    assert run.exit_code == 0, run.error
    assert "datasets verbosity True" in out
    assert "vit returns tuple 1" in out  # (logits,), as transformers 4's torchscript=True returned it
    assert "groq returns Tensor (1, " in out and "True" in out.split("groq returns", 1)[1].splitlines()[0]
    assert "minilm is BertModel" in out
    assert "two outputs tuple 2" in out  # last_hidden_state and pooler_output: a tuple of the graph's two tensors


def test_groq_nlp_proof_point_sets_and_roberta_positions():
    """GroqFlow's MiniLM and RoBERTa proof points read STS-B (``stsb_multi_mt``, English) and CoNLL-2003 through
    ``datasets``: the stand-ins have their columns, related sentence pairs score higher than unrelated ones, every
    word has a named-entity tag in CoNLL's nine; a RoBERTa built here holds 512 tokens (its positions start after
    the padding index, so its table is 2 longer, as roberta-base's 514 for 512)."""
    from accelkit.vendor import hf_datasets, synthetic

    sts = hf_datasets.load_dataset("stsb_multi_mt", "en", split="test")
    assert sts.column_names == ["sentence1", "sentence2", "similarity_score"] and len(sts) == 128
    scores = sts["similarity_score"]
    assert 0 <= min(scores) < 1.5 < 3.0 < max(scores) <= 5  # unrelated pairs low, shortened copies high
    assert sts.rename_columns({"similarity_score": "label"}).column_names[-1] == "label"
    ner = hf_datasets.load_dataset("conll2003", split="test")
    assert ner.column_names == ["id", "tokens", "pos_tags", "chunk_tags", "ner_tags"]
    tags = [t for row in ner["ner_tags"] for t in row]
    assert all(len(r["tokens"]) == len(r["ner_tags"]) for r in ner) and set(tags) <= set(range(9))
    assert hf_datasets.NER_TAGS.index("B-MISC") in tags and 0 in tags
    with synthetic.installed(hf=True, vision=False):
        from transformers import AutoModelForTokenClassification

        model = AutoModelForTokenClassification.from_pretrained("roberta-base").eval()
    assert model.config.max_position_embeddings == 514  # roberta-base's: 512 tokens after the padding index
    assert model(torch.ones(1, 128, dtype=torch.long)).logits.shape[:2] == (1, 128)


def test_a_helpers_package_setup_py_names_the_install_for_what_it_imports(tmp_path, monkeypatch, capsys):
    """GroqFlow's proof points import ``demo_helpers``, a package of the clone installed from its ``setup.py``,
    which imports ``prettytable``: where that is missing, the launcher names the line of the script, the helpers'
    setup.py requirement and the install (read as text: the setup.py is not run)."""
    from accelkit.vendor import run_script

    project = tmp_path / "demo_helpers"
    (project / "demo_helpers").mkdir(parents=True)
    (project / "setup.py").write_text("raise SystemExit('setup.py must not run')\n"
                                      "setup(name='demo_helpers', install_requires=[\n"
                                      "    'accelkit-no-such-table>=3.3.0',\n    \"wget>=3.2\",\n])\n")
    (project / "demo_helpers" / "__init__.py").write_text("")
    (project / "demo_helpers" / "compute_performance.py").write_text("import accelkit_no_such_table\n")
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "bert_tiny.py"
    script.write_text("import torch\nfrom demo_helpers.compute_performance import compute_performance\n")
    run = run_script(script, (), synthetic_data=False)
    err = capsys.readouterr().err
    assert run.exit_code == 1 and "Traceback" not in err
    assert f"error at {script}:2:" in err and "demo_helpers's setup.py lists it (accelkit-no-such-table>=3.3.0)" in err
    assert "pip install 'accelkit-no-such-table>=3.3.0'" in err


def test_a_package_built_for_an_older_release_of_another_names_both_and_the_requirement(tmp_path, monkeypatch):
    from accelkit.vendor import run_script

    site = tmp_path / "site"
    (site / "oldlib").mkdir(parents=True)
    (site / "oldlib" / "__init__.py").write_text("from packaging import RemovedHelper\n")
    (site / "oldlib-1.2.dist-info").mkdir()
    (site / "oldlib-1.2.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: oldlib\nVersion: 1.2\nRequires-Dist: packaging (<2.0,>=1.0)\n"
        "Requires-Dist: pytest ; extra == 'test'\n")
    (site / "oldlib-1.2.dist-info" / "top_level.txt").write_text("oldlib\n")
    (tmp_path / "app.py").write_text("import poptorch\nimport oldlib\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(tmp_path)
    run = run_script(tmp_path / "app.py", [], synthetic_data=True, quiet=True)
    assert run.exit_code == 1
    assert "app.py:2: import oldlib" in run.error
    assert "oldlib 1.2 imports RemovedHelper from packaging, which packaging" in run.error
    assert "(oldlib asks for packaging<2.0,>=1.0)" in run.error
    assert "pip install --target <folder> 'packaging<2.0,>=1.0'" in run.error
    assert "oldlib" not in sys.modules


def test_a_module_from_a_git_requirement_is_named_with_that_line(tmp_path, monkeypatch):
    from accelkit.vendor import run_script

    (tmp_path / "requirements.txt").write_text(
        "numpy\ngit+https://github.com/someone/PyFrobnicate.git@8706665787c7290397859075ae2f0bf35afeb41a\n")
    (tmp_path / "app.py").write_text("import poptorch\nimport frobnicate\n")
    monkeypatch.chdir(tmp_path)
    run = run_script(tmp_path / "app.py", [], synthetic_data=True, quiet=True)
    assert run.exit_code == 1
    assert "frobnicate is not installed here; the script's requirements.txt lists it" in run.error
    assert "pip install 'git+https://github.com/someone/PyFrobnicate.git@8706665787c7290397859075ae2f0bf35afeb41a'" \
        in run.error


def test_image_folder_stand_in_reads_the_users_class_folders_as_torchvision_does(tmp_path):
    from PIL import Image

    from accelkit.vendor import synthetic

    for cls, names in (("dogs", ["b.png", "a.JPG", "notes.txt"]), ("cats", ["c.jpeg"])):
        (tmp_path / "train" / cls / "deep").mkdir(parents=True)
        for n in names:
            target = tmp_path / "train" / cls / ("deep" if n.startswith("c") else "") / n
            if n.endswith(".txt"):
                target.write_text("not an image")
            else:
                Image.new("L", (5, 4), 200).save(target, format="PNG" if n.endswith("png") else "JPEG")
    (tmp_path / "empty").mkdir()
    with synthetic.installed(hf=False, vision=True):
        import torchvision  # the stand-in: torchvision is not installed here

        folder = torchvision.datasets.ImageFolder(str(tmp_path / "train"), transform=torchvision.transforms.ToTensor())
        assert folder.classes == ["cats", "dogs"] and folder.class_to_idx == {"cats": 0, "dogs": 1}
        assert [Path(p).name for p, _ in folder.samples] == ["c.jpeg", "a.JPG", "b.png"] and folder.targets == [0, 1, 1]
        image, target = folder[2]
        assert image.shape == (3, 4, 5) and target == 1 and folder.imgs is folder.samples
        with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
            torchvision.datasets.ImageFolder(str(tmp_path / "empty"))
        texts = torchvision.datasets.DatasetFolder(str(tmp_path / "train"), loader=lambda p: Path(p).read_text(),
                                                   is_valid_file=lambda p: p.endswith(".txt"), allow_empty=True)
        assert [t for _, t in texts.samples] == [1] and texts[0][0] == "not an image"
        from torchvision.datasets.folder import IMG_EXTENSIONS, default_loader

        assert ".png" in IMG_EXTENSIONS and default_loader(folder.samples[0][0]).mode == "RGB"


def test_a_run_without_synthetic_data_reports_no_earlier_runs_substitutions(tmp_path):
    """A notebook runs several vendor scripts in one process: a run without ``--synthetic-data`` stood nothing in,
    so its summary lists no substitutions, whatever the run before it (with the stand-ins) said."""
    from accelkit.vendor import run_script

    with_data = tmp_path / "with_data.py"
    with_data.write_text("from torchvision import datasets\nprint(len(datasets.MNIST('mnist_data', train=False)))\n")
    plain = tmp_path / "plain.py"
    plain.write_text("print('no data here')\n")
    first = run_script(with_data, synthetic_data=True, quiet=True, cwd=tmp_path)
    assert first.exit_code == 0, first.error
    assert any("torchvision.datasets.MNIST" in s for s in first.substitutions)
    second = run_script(plain, quiet=True, cwd=tmp_path)
    assert second.exit_code == 0, second.error
    assert second.substitutions == [] and "synthetic data" not in second.summary()


def test_from_pretrained_with_the_scripts_config_says_its_weights_are_random(tmp_path):
    """``from_pretrained(name, config=...)`` under ``--synthetic-data`` builds the model from the script's own config
    (the checkpoint is not here): the run says its weights are random, as it does for a config made here."""
    from accelkit.vendor import run_script

    script = tmp_path / "finetune.py"
    script.write_text(
        "import transformers\n"
        "cfg = transformers.BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, "
        "intermediate_size=64, vocab_size=100, num_labels=3)\n"
        "m = transformers.BertForSequenceClassification.from_pretrained('bert-base-uncased', config=cfg)\n"
        "a = transformers.AutoModelForSequenceClassification.from_pretrained('bert-base-uncased', config=cfg)\n"
        "print(m.config.num_labels, a.config.hidden_size)\n")
    run = run_script(script, synthetic_data=True, quiet=True, cwd=tmp_path)
    assert run.exit_code == 0, run.error
    assert "3 32" in (run.output or "")
    said = [s for s in run.substitutions if "config=..." in s]
    assert len(said) == 2 and all("RANDOM weights" in s for s in said), run.substitutions
    assert any("BertForSequenceClassification" in s for s in said)
