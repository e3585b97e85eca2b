"""ak.sweep: the grid is checked before anything starts, every configuration is a row (a refusal too), the rows
agree with ak.compile called directly, and the same sweep runs on a LocalCluster and on a scheduler with two
workers started as separate processes, reached by address."""

from __future__ import annotations

import inspect
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.errors import ArgumentError, UnknownNameError
from accelkit.workflow import SweepError, grid, load_sweep, save_sweep, sweep
from accelkit.workflow.evaluate import MODEL_CACHE

distributed = pytest.importorskip("distributed")


def _mlp() -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).eval(), (torch.randn(4, 16),)


class DataDependent(nn.Module):
    """A Python ``if`` on a tensor's value: capture refuses it."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        if y.sum() > 0:
            return y
        return -y


# --- the grid, checked before anything starts -------------------------------------------------------

def test_an_unknown_grid_key_names_the_keys_it_takes() -> None:
    with pytest.raises(ArgumentError, match="'batchsize' is not an argument of ak.compile") as err:
        grid.expand({"mlp": _mlp()}, ["a100"], batchsize=[1, 2])
    assert "precision" in (err.value.fix or "") and "batch" in (err.value.fix or "")


def test_bad_grids_are_accelkit_errors() -> None:
    with pytest.raises(ArgumentError, match="empty list"):
        grid.expand({"mlp": _mlp()}, ["a100"], batch=[])
    with pytest.raises(UnknownNameError, match="nochip"):
        grid.expand({"mlp": _mlp()}, ["a100", "nochip"])
    with pytest.raises(ArgumentError, match="targets is empty"):
        grid.expand({"mlp": _mlp()}, [])
    with pytest.raises(ArgumentError, match="models is empty"):
        grid.expand({}, ["a100"])
    with pytest.raises(ArgumentError, match="needs its example inputs"):
        grid.expand({"mlp": _mlp()[0]}, ["a100"])
    with pytest.raises(ArgumentError, match="output_tokens is missing"):
        grid.expand({"mlp": _mlp()[0]}, ["a100"], prompt_tokens=[128])
    with pytest.raises(ArgumentError, match="'training' is not an argument of ak.serve"):
        grid.expand({"mlp": _mlp()[0]}, ["a100"], prompt_tokens=128, output_tokens=8, training=True)
    with pytest.raises(ArgumentError, match="chips must be a whole number"):
        grid.expand({"mlp": _mlp()}, ["a100"], chips=[1, 0])
    with pytest.raises(ArgumentError, match="training must be True or False"):
        grid.expand({"mlp": _mlp()}, ["a100"], training="yes")


def test_the_grid_follows_the_signatures() -> None:
    """Every keyword of ak.compile is a grid key (batch_size as batch), so an argument added there (such as
    ``stack``) sweeps without a change in the sweep."""
    params = set(inspect.signature(ak.compile).parameters) - {"model", "example_inputs", "target", "batch_size"}
    assert params | {"batch"} == set(grid.compile_keys())
    plan = grid.expand({"mlp": _mlp()}, ["a100", "sn40l"], batch=[1, 8], precision="bf16", training=[False, True])
    assert len(plan.configs) == 2 * 2 * 2
    assert plan.configs[0] == {"model": "mlp", "target": "a100", "batch": 1, "precision": "bf16", "training": False}
    assert grid.call_kwargs(plan.configs[0], "compile")["batch_size"] == 1


def test_stack_is_forwarded_when_compile_takes_it() -> None:
    if "stack" not in inspect.signature(ak.compile).parameters:
        pytest.skip("ak.compile has no stack= argument yet")
    plan = grid.expand({"mlp": _mlp()}, ["h100"], stack=["eager", "compiled"])
    assert [grid.call_kwargs(c, "compile")["stack"] for c in plan.configs] == ["eager", "compiled"]


# --- on a LocalCluster -------------------------------------------------------------------------------

def test_sweep_on_a_local_cluster(tmp_path: Path) -> None:
    """Rows in grid order, one per configuration; an ok row is what ak.compile says directly; a refusal and a
    model that fails capture are rows; each model is captured once per worker process; Parquet round trip."""
    MODEL_CACHE.clear()
    mlp = _mlp()
    models = {"mlp": mlp, "datadep": (DataDependent(), (torch.randn(2, 8),))}
    df = sweep(models, ["a100", "gc200"], batch=[2, 8], precision=["bf16"], workers=2, processes=False,
               progress=False)
    assert len(df) == 2 * 2 * 2
    assert list(df.columns[:5]) == ["model", "target", "kind", "batch", "precision"]
    assert list(zip(df.model, df.target, df.batch, strict=True))[:4] == [
        ("mlp", "a100", 2), ("mlp", "a100", 8), ("mlp", "gc200", 2), ("mlp", "gc200", 8)]
    ok = df[df.status == "ok"]
    assert set(ok.target) == {"a100"} and set(ok.model) == {"mlp"}
    direct = ak.compile(mlp[0], mlp[1], target="a100", batch_size=8, precision="bf16").report
    row = ok[ok.batch == 8].iloc[0]
    assert row.step_time_s == pytest.approx(direct.step_time_s)
    assert row.throughput == pytest.approx(direct.throughput)
    assert row.time_per_sample_s == pytest.approx(direct.step_time_s / 8)
    assert row.exec_mode == direct.mode and row.memory_per_chip_bytes > 0 and row.bound_by in direct.bound_by
    refused = df[(df.model == "mlp") & (df.target == "gc200")]
    assert set(refused.status) == {"refused"} and set(refused.error) == {"PrecisionError"}
    assert refused.message.str.contains("bf16").all() and refused.fix.notna().all()
    capture = df[df.model == "datadep"]
    assert set(capture.status) == {"refused"} and set(capture.error) == {"CaptureError"}
    # captured once per model in this process (the two worker threads share the cache), not once per row
    assert (df[df.model == "mlp"].capture_s > 0).sum() == 1
    assert (df.eval_s >= 0).all()

    saved = save_sweep(df, tmp_path / "space.parquet")
    back = load_sweep(saved)
    assert list(back.columns) == list(df.columns) and len(back) == len(df)
    assert back.step_time_s.equals(df.step_time_s) and list(back.status) == list(df.status)
    with pytest.raises(SweepError, match="no saved sweep"):
        load_sweep(tmp_path / "missing.parquet")


def test_a_serving_sweep_and_a_failing_factory() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    def gpt() -> nn.Module:
        with torch.device("meta"):
            return GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000,
                                              use_cache=False)).eval()

    def broken() -> nn.Module:
        raise RuntimeError("this factory cannot build its model")

    df = sweep({"gpt": gpt, "broken": broken}, ["h100"], prompt_tokens=[64], output_tokens=8, batch=[1, 4],
               workers=1, processes=False, progress=False)
    served = df[df.model == "gpt"]
    assert list(served.status) == ["ok", "ok"] and (served.ttft_s > 0).all() and (served.tpot_s > 0).all()
    direct = ak.serve(gpt(), target="h100", prompt_tokens=64, output_tokens=8, batch=4)
    assert served.iloc[1].step_time_s == pytest.approx(direct.latency_s)
    failed = df[df.model == "broken"]
    assert set(failed.status) == {"error"} and failed.message.str.contains("cannot build").all()


def test_ctrl_c_cancels_and_closes_the_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list = []
    real = distributed.LocalCluster

    def record(*args, **kwargs):
        cluster = real(*args, **kwargs)
        started.append(cluster)
        return cluster

    def interrupted(futures):
        raise KeyboardInterrupt

    monkeypatch.setattr(distributed, "LocalCluster", record)
    monkeypatch.setattr(distributed, "as_completed", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sweep({"mlp": _mlp()}, ["a100"], batch=[1, 2, 4], workers=1, processes=False, progress=False)
    assert len(started) == 1 and started[0].status.name == "closed"


def test_a_client_that_is_not_a_client_is_refused() -> None:
    with pytest.raises(ArgumentError, match="dask.distributed.Client"):
        sweep({"mlp": _mlp()}, ["a100"], client="tcp://127.0.0.1:8786", progress=False)


# --- a scheduler and two workers as separate processes, reached by address ----------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scheduler(bin_dir: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """A Dask scheduler on a free port of 127.0.0.1, once it listens there. A port found free can be taken before
    the scheduler binds it (by another test's cluster, under pytest-xdist): the scheduler then exits, and another
    port is tried."""
    for _ in range(5):
        port = _free_port()
        proc = subprocess.Popen([str(bin_dir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                 "--no-dashboard"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return proc, f"tcp://127.0.0.1:{port}"
            time.sleep(0.2)
        proc.kill()
        proc.wait()
    raise AssertionError("no Dask scheduler could listen on a free port")


@pytest.mark.timeout(180)
def test_sweep_on_a_scheduler_and_two_workers_by_address(monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = []
    try:
        scheduler, address = _scheduler(bin_dir, env)
        procs.append(scheduler)
        for _ in range(2):
            procs.append(subprocess.Popen([str(bin_dir / "dask"), "worker", address, "--nthreads", "1", "--no-nanny",
                                           "--no-dashboard", "--host", "127.0.0.1"], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with distributed.Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=90)
        monkeypatch.setenv("ACCELKIT_DASK_SCHEDULER", address)
        # a captured graph travels as it is (a few kB): the workers compile it, none of them captures
        entry = ak.zoo.get("ffn_logreg")
        graph = ak.capture(entry.model, entry.example_inputs)
        t0 = time.perf_counter()
        df = sweep({"ffn": graph}, ["a100", "h100", "sn40l", "wse3"], batch=[1, 2, 4, 8, 16, 32],
                   training=[False, True], progress=False)
        assert time.perf_counter() - t0 < 120
        assert len(df) == 48 and df.worker.nunique() == 2, df.worker.value_counts()  # both workers took rows
        assert set(df[~df.training].status) == {"ok"} and (df.capture_s == 0).all()
        trained = df[df.training]  # an inference graph cannot be compiled for training: a refusal per row
        assert set(trained.status) == {"refused"} and trained.message.str.contains("training=True").all()
        direct = ak.compile(graph, target="sn40l", batch_size=16).report
        assert df[(df.target == "sn40l") & (df.batch == 16) & ~df.training].step_time_s.iloc[0] == \
            pytest.approx(direct.step_time_s)
    finally:
        for p in reversed(procs):  # workers first, the scheduler last; always, even on a failure
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_an_address_with_no_scheduler_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    module = sys.modules["accelkit.workflow.sweep"]  # the module (the package's `sweep` is the function)
    monkeypatch.setattr(module, "CONNECT_TIMEOUT_S", 1.0)
    monkeypatch.setenv("ACCELKIT_DASK_SCHEDULER", f"tcp://127.0.0.1:{_free_port()}")
    t0 = time.perf_counter()
    with pytest.raises(SweepError, match="no Dask scheduler answers"):
        sweep({"mlp": _mlp()}, ["a100"], progress=False)
    assert time.perf_counter() - t0 < 30


def test_a_capture_that_fails_once_is_tried_again_and_a_real_failure_is_kept(monkeypatch):
    """A threaded sweep once saw one model's capture fail and every one of its rows refused; a capture that
    fails once and then works is not cached as a failure, one that fails twice is."""
    from torch import nn

    from accelkit.errors import CaptureError
    from accelkit.workflow import evaluate as ev

    calls = []

    def flaky(model, inputs, training):
        calls.append(training)
        if len(calls) == 1:
            raise CaptureError("a one-off", kind="unsupported")
        return None

    monkeypatch.setattr(ev, "captured", flaky)
    built = ev.Built(nn.Linear(2, 2), (torch.zeros(1, 2),))
    assert built.capture(False)[0] is None and len(calls) == 2
    assert built.capture(False) == (None, 0.0) and len(calls) == 2  # kept after it worked

    def broken(model, inputs, training):
        calls.append(training)
        raise CaptureError("always", kind="unsupported")

    monkeypatch.setattr(ev, "captured", broken)
    error, _ = ev.Built(nn.Linear(2, 2), (torch.zeros(1, 2),)).capture(True)
    assert isinstance(error, CaptureError) and calls[-2:] == [True, True]
