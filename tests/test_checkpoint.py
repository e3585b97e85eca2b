"""Session checkpoints are saved all or nothing (a crash at any point leaves the previous or the new one, and the
next save tidies up), carry a checksum, and load all or nothing: a checkpoint that does not fit is refused with
an error naming what differs, before the model or the optimizer is touched."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.runtime import CheckpointError
from accelkit.runtime.checkpoint import SCHEMA, _checksum
from accelkit.runtime.session import CHECKPOINT_SCHEMA


class Net(nn.Module):
    def __init__(self, hidden: int = 8) -> None:
        super().__init__()
        self.fc = nn.Linear(4, hidden)
        self.head = nn.Linear(hidden, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.fc(x)))


def session(model: nn.Module | None = None, optimizer: type[torch.optim.Optimizer] = torch.optim.Adam) -> ak.Session:
    torch.manual_seed(0)
    m = model or Net()
    return ak.Session(m, target="a100", optimizer=optimizer(m.parameters(), lr=1e-2), loss_fn=nn.MSELoss())


def train(s: ak.Session, steps: int) -> None:
    g = torch.Generator().manual_seed(s.steps)
    dtype = next(s.model.parameters()).dtype
    for _ in range(steps):
        s.run(torch.randn(8, 4, generator=g, dtype=dtype), labels=torch.randn(8, 2, generator=g, dtype=dtype))


def snapshot(s: ak.Session) -> dict[str, Any]:
    """Everything a load may change: weights, optimizer state, clock and torch's RNG."""
    opt = s.optimizer.state_dict() if s.optimizer else {"state": {}}
    return {"model": {k: v.clone() for k, v in s.model.state_dict().items()},
            "optim": {i: {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in st.items()}
                      for i, st in opt["state"].items()},
            "clock": (s.steps, s.samples, s.simulated_time_s), "rng": torch.get_rng_state()}


def assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a["model"].keys() == b["model"].keys() and a["optim"].keys() == b["optim"].keys()
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    for i in a["optim"]:
        for k, v in a["optim"][i].items():
            assert torch.equal(v, b["optim"][i][k]) if isinstance(v, torch.Tensor) else v == b["optim"][i][k]
    assert a["clock"] == b["clock"] and torch.equal(a["rng"], b["rng"])


def leftovers(ckpt: Path) -> list[str]:
    return sorted(p.name for p in ckpt.parent.iterdir() if p.name.startswith(f".{ckpt.name}."))


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A checkpoint after 2 steps, and what it holds."""
    s = session()
    train(s, 2)
    ckpt = Path(s.save_checkpoint(tmp_path / "ckpt"))
    assert sorted(p.name for p in ckpt.iterdir()) == ["checkpoint.json", "tensors.safetensors"]
    return ckpt, snapshot(s)


def loads_as(ckpt: Path, expected: dict[str, Any]) -> None:
    s = session()
    s.load_checkpoint(ckpt)
    assert_same(snapshot(s), expected)


def test_the_schema_is_one_number() -> None:
    assert CHECKPOINT_SCHEMA == SCHEMA


# ---- load all or nothing ----------------------------------------------------------------------
def refused(ckpt: Path, s: ak.Session, *says: str) -> CheckpointError:
    """Loading ``ckpt`` into ``s`` is refused with all of ``says`` in the message, and ``s`` is unchanged."""
    train(s, 1)  # a session with optimizer state of its own
    before = snapshot(s)
    with pytest.raises(CheckpointError) as info:
        s.load_checkpoint(ckpt)
    for text in says:
        assert text in str(info.value)
    assert info.value.fix
    assert_same(snapshot(s), before)
    return info.value


def test_a_flipped_byte_is_refused_and_the_model_is_untouched(saved: tuple[Path, dict[str, Any]]) -> None:
    ckpt, _ = saved
    data = bytearray((ckpt / "tensors.safetensors").read_bytes())
    data[-20] ^= 0x01  # one bit of one weight: the file still parses
    (ckpt / "tensors.safetensors").write_bytes(bytes(data))
    refused(ckpt, session(), "tensors.safetensors is truncated, corrupted or replaced", "SHA-256")


def test_a_differently_shaped_model_is_named_and_untouched(saved: tuple[Path, dict[str, Any]]) -> None:
    err = refused(saved[0], session(Net(hidden=16)), "parameter fc.weight: checkpoint has shape (8, 4), model has (16, 4)")
    assert "same model architecture" in str(err.fix)


def test_a_model_with_other_layers_is_named_and_untouched(saved: tuple[Path, dict[str, Any]]) -> None:
    wider = Net()
    wider.extra = nn.Linear(2, 2)
    refused(saved[0], session(wider), "does not match this model", "extra.weight")


def test_a_model_of_another_dtype_is_named_and_untouched(saved: tuple[Path, dict[str, Any]]) -> None:
    refused(saved[0], session(Net().double()), "checkpoint has dtype torch.float32, model has torch.float64")


def test_another_optimizer_is_refused_before_the_model_is_touched(saved: tuple[Path, dict[str, Any]]) -> None:
    refused(saved[0], session(optimizer=torch.optim.SGD), "holds Adam state", "optimizer is SGD")


def _edit(change: Callable[[dict[str, Any]], Any], *, sign: bool = True) -> Callable[[Path], None]:
    """Edit checkpoint.json; ``sign``: recompute its checksum too, as anyone can (it guards against damage, not
    against a writer), so what is checked behind the checksum is tested as well."""
    def apply(ckpt: Path) -> None:
        meta = json.loads((ckpt / "checkpoint.json").read_text())
        change(meta)
        if sign:
            meta["checksum"] = _checksum(meta)
        (ckpt / "checkpoint.json").write_text(json.dumps(meta))
    return apply


def _tensor_to_number(m: dict[str, Any]) -> None:
    m["optimizer"]["state"]["0"]["exp_avg"] = {"value": 0.5}


JSON_CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "garbage": (lambda c: (c / "checkpoint.json").write_bytes(b"\x00\xff garbage"), "corrupted"),
    "truncated": (lambda c: (c / "checkpoint.json").write_text((c / "checkpoint.json").read_text()[:100]),
                  "corrupted"),
    "nested 100000 deep": (lambda c: (c / "checkpoint.json").write_text("[" * 100_000 + "]" * 100_000),
                           "corrupted"),
    "a list": (lambda c: (c / "checkpoint.json").write_text("[]"), "checkpoint table"),
    "schema 1 (no checksum)": (_edit(lambda m: m.update(schema_version=1)), "schema 1"),
    "lr edited, checksum not": (_edit(lambda m: m["optimizer"]["param_groups"][0].update(lr=8.001), sign=False),
                                "modified after it was saved"),
    "checksum removed": (_edit(lambda m: m.pop("checksum"), sign=False), "checksum does not match"),
    "beta2 of 5.0": (_edit(lambda m: m["optimizer"]["param_groups"][0].update(betas=[0.9, 5.0])), "beta"),
    "layer 0's weights as layer 2's": (_edit(lambda m: m.update(aliases={"model.head.weight": "model.fc.weight"})),
                                       "tied weights"),
    "a number where a tensor belongs": (_edit(_tensor_to_number), "exp_avg is 0.5, where the optimizer keeps a tensor"),
    "no checksum": (_edit(lambda m: m.pop("tensors")), "'tensors'"),
    "steps a string": (_edit(lambda m: m["clock"].update(steps="2")), "clock.steps is '2'"),
    "negative time": (_edit(lambda m: m["clock"].update(simulated_time_s=-1)), "clock.simulated_time_s"),
    "clock missing": (_edit(lambda m: m.pop("clock")), "malformed fields (KeyError: 'clock')"),
    "lr a string": (_edit(lambda m: m["optimizer"]["param_groups"][0].update(lr="fast")), "lr is 'fast'"),
    "a parameter group too many": (_edit(lambda m: m["optimizer"]["param_groups"].append(
        m["optimizer"]["param_groups"][0])), "2 parameter groups"),
    "state for a parameter it lacks": (_edit(lambda m: m["optimizer"]["state"].update({"99": {}})), "'99'"),
    "state naming a missing tensor": (_edit(lambda m: m["optimizer"]["state"]["0"]["exp_avg"].update(
        tensor="optim.9.nope")), "optim.9.nope"),
    "an alias to nothing": (_edit(lambda m: m.update(aliases={"model.x": "model.nope"})), "model.nope"),
    "tensors deleted": (lambda c: (c / "tensors.safetensors").unlink(), "tensors.safetensors is missing"),
}


@pytest.mark.parametrize("corruption", list(JSON_CORRUPTIONS))
def test_every_corrupted_checkpoint_is_refused_and_the_model_is_untouched(
        saved: tuple[Path, dict[str, Any]], corruption: str) -> None:
    corrupt, says = JSON_CORRUPTIONS[corruption]
    corrupt(saved[0])
    refused(saved[0], session(), says)


# ---- save all or nothing ----------------------------------------------------------------------
def test_a_save_that_fails_writing_json_keeps_the_previous_checkpoint(
        saved: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    ckpt, first = saved
    s = session()
    train(s, 3)

    def crash(path: Path, body: dict[str, Any]) -> None:
        path.write_text(json.dumps(body)[:50])  # half written, then the process dies
        raise OSError("disk full")

    monkeypatch.setattr("accelkit.runtime.checkpoint._write_json", crash)
    with pytest.raises(CheckpointError, match="disk full"):
        s.save_checkpoint(ckpt)
    loads_as(ckpt, first)
    assert leftovers(ckpt) == []


def test_a_crash_between_the_renames_still_loads_the_previous_checkpoint(
        saved: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    ckpt, first = saved
    s = session()
    train(s, 3)
    real = os.rename
    calls: list[str] = []

    def dies_after_moving_aside(src: Any, dst: Any) -> None:  # the old one moved aside, then nothing more happens
        calls.append(Path(dst).name)
        if Path(dst).name == "ckpt" and any(c.startswith(".ckpt.old") for c in calls):
            raise KeyboardInterrupt
        real(src, dst)

    # where folders cannot be exchanged in one step (not Linux), a save renames twice
    monkeypatch.setattr("accelkit.compiler.manifest._exchange", lambda a, b: False)
    monkeypatch.setattr(os, "rename", dies_after_moving_aside)
    with pytest.raises(KeyboardInterrupt):
        s.save_checkpoint(ckpt)
    monkeypatch.setattr(os, "rename", real)
    assert not ckpt.exists() and [n[:9] for n in leftovers(ckpt)] == [".ckpt.old"]
    with pytest.warns(UserWarning, match="a save was interrupted"):
        loads_as(ckpt, first)
    second = snapshot(s)
    s.save_checkpoint(ckpt)  # the next save replaces it and tidies up
    assert leftovers(ckpt) == []
    loads_as(ckpt, second)


def _killed_save(where: str, ckpt: Path) -> int:
    """Train 3 steps and save over ``ckpt`` in a child process that dies (``os._exit``: no clean-up, no flush) at
    ``where``; returns its exit code. The child is a fork of this one, so it imports nothing again."""
    pid = os.fork()
    if pid:
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    try:  # the child: only os._exit leaves it
        s = session()
        train(s, 3)
        if where == "writing tensors":
            import safetensors.torch as st
            real = st.save_file

            def save_file(tensors: Any, path: Any, metadata: Any = None) -> None:
                real(tensors, path, metadata=metadata)
                with open(path, "r+b") as f:
                    f.truncate(100)
                os._exit(9)
            st.save_file = save_file  # save_checkpoint imports it when called
        elif where == "between the renames":  # where folders cannot be exchanged in one step (not Linux)
            import accelkit.compiler.manifest as m
            m._exchange = lambda a, b: False  # type: ignore[assignment]
            real_rename = os.rename

            def rename(src: Any, dst: Any) -> None:
                if ".tmp-" in str(src) and not os.path.exists(dst):
                    os._exit(9)
                real_rename(src, dst)
            os.rename = rename
        else:
            import accelkit.compiler.manifest as m
            real_swap = m._swap_in

            def swap_in(tmp: Any, root: Any) -> None:
                real_swap(tmp, root)
                os._exit(9)
            m._swap_in = swap_in  # type: ignore[assignment]
        s.save_checkpoint(ckpt)
    except BaseException:
        import traceback
        traceback.print_exc()
    finally:
        os._exit(1)  # the save finished or failed before the point it should have died at


@pytest.mark.parametrize("where", ["writing tensors", "between the renames", "after the rename"])
def test_a_save_killed_at_any_point_leaves_a_checkpoint_that_loads(
        saved: tuple[Path, dict[str, Any]], where: str) -> None:
    ckpt, first = saved
    assert _killed_save(where, ckpt) == 9
    s = session()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s.load_checkpoint(ckpt)
    assert any("a save was interrupted" in str(w.message) for w in caught) == (where == "between the renames")
    if where == "after the rename":  # the new one is complete: 3 steps
        assert s.steps == 3
    else:
        assert_same(snapshot(s), first)
    assert leftovers(ckpt)  # the killed save left something behind ...
    train(s, 1)
    s.save_checkpoint(ckpt)
    assert leftovers(ckpt) == []  # ... which the next save removes


def test_a_folder_with_other_files_is_not_replaced(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(CheckpointError, match="notes.txt"):
        session().save_checkpoint(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me" and leftovers(tmp_path / "mine") == []


@pytest.mark.parametrize("path", [None, 3, b"ckpt"])
def test_a_checkpoint_path_must_be_a_path(path: Any) -> None:
    with pytest.raises(CheckpointError, match="must be a folder path"):
        session().save_checkpoint(path)
    with pytest.raises(CheckpointError, match="must be a folder path"):
        session().load_checkpoint(path)


def test_a_save_finishing_beside_another_does_not_break_its_listing(tmp_path: Path, monkeypatch) -> None:
    """Two saves of one checkpoint in flight: one lists the temporary folders beside the path while the other
    removes its own; the one that vanished is skipped, not a FileNotFoundError."""
    from accelkit.runtime import checkpoint

    kept = tmp_path / ".ck.tmp-1-aaa"
    kept.mkdir()
    gone = tmp_path / ".ck.tmp-2-bbb"  # listed, then removed before its time is read
    real = Path.iterdir
    monkeypatch.setattr(Path, "iterdir", lambda self: iter([*real(self), gone]))
    assert checkpoint._siblings(tmp_path / "ck", "tmp") == [kept]
