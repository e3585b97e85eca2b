"""``torch.hub`` under ``accelkit vendor-run --synthetic-data``: torchvision's hub entries built here, any other
download refused by name.

``torch.hub.load("pytorch/vision:v0.10.0", "resnet50", weights="ResNet50_Weights.IMAGENET1K_V1")`` (GroqFlow's
computer-vision proof points) fetches torchvision's ``hubconf.py`` from GitHub, then the trained weights. Neither is
reachable on a workshop machine, so for one run:

- ``pytorch/vision`` (any tag) is answered by ``torchvision.models.<name>``: accelkit's stand-in
  (:mod:`accelkit.vendor.vision_models`) where torchvision is not installed, else the installed torchvision. Either
  way the weights are RANDOM (the trained ones are a download), and the run says so once.
- any other repository, and ``torch.hub.load_state_dict_from_url`` / ``download_url_to_file``, is refused with an
  :class:`HubError` naming the repository or URL and what to do instead.
- ``source="local"`` (a clone on disk) is PyTorch's own ``torch.hub.load``: nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import torch.hub

from accelkit.errors import AccelkitError
from accelkit.vendor.notices import say

VISION_REPO = re.compile(r"^(pytorch/vision)(:[\w.\-]+)?$")  # owner/name[:tag], as torch.hub names a repository


class HubError(AccelkitError):
    """A ``torch.hub`` call that would download, with no stand-in under ``--synthetic-data``."""


def _torchvision_models() -> tuple[ModuleType, bool]:
    """``torchvision.models`` and whether it is the installed torchvision's (else accelkit's stand-in)."""
    loaded = sys.modules.get("torchvision")
    if loaded is not None and "__accelkit_facade__" in vars(loaded):
        from accelkit.vendor import vision_models

        return vision_models, False
    if importlib.util.find_spec("torchvision") is not None:
        import torchvision.models  # type: ignore[import-not-found]

        return torchvision.models, True
    from accelkit.vendor import vision_models

    return vision_models, False


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github", trust_repo: Any = None,
         force_reload: bool = False, verbose: bool = True, skip_validation: bool = False, **kwargs: Any) -> Any:
    """``torch.hub.load`` for the run: see the module docstring."""
    if source == "local":
        return _REAL["load"](repo_or_dir, model, *args, source=source, trust_repo=trust_repo,
                             force_reload=force_reload, verbose=verbose, skip_validation=skip_validation, **kwargs)
    call = f"torch.hub.load({repo_or_dir!r}, {model!r})"
    if not VISION_REPO.match(str(repo_or_dir)):
        repo = str(repo_or_dir).split(":")[0]
        raise HubError(f"{call} downloads {repo}'s hubconf.py and its weights from GitHub; accelkit vendor-run "
                       "--synthetic-data answers only pytorch/vision's models offline",
                       fix=f"clone {repo} and load it from disk, torch.hub.load(<its folder>, {model!r}, "
                           "source='local'), or build the model from its own class")
    models, installed = _torchvision_models()
    build = getattr(models, model, None) if not model.startswith("_") else None
    if not callable(build):
        have = ", ".join(sorted(n for n in getattr(models, "__all__", []) if n[:1].islower()))
        raise HubError(f"{call}: torchvision is not installed and accelkit's stand-in of torchvision.models has no "
                       f"{model!r}", fix=f"use one of {have}, or install torchvision (CPU wheel)")
    wants_trained = kwargs.get("weights") is not None or bool(kwargs.get("pretrained"))
    if installed:  # the installed torchvision would download the trained weights: build it untrained (the stand-in
        # says RANDOM weights itself)
        kwargs.pop("weights", None)
        kwargs.pop("pretrained", None)
    say(f"{call} is torchvision.models.{model} built here ("
        + ("the installed torchvision" if installed else "accelkit's stand-in: torchvision is not installed")
        + (", RANDOM weights: the trained ones are a download" if wants_trained and installed else "")
        + "); nothing downloaded")
    return build(*args, **kwargs)


def load_state_dict_from_url(url: str, *args: Any, **kwargs: Any) -> Any:
    """``torch.hub.load_state_dict_from_url`` for the run: a download, refused by name."""
    raise HubError(f"torch.hub.load_state_dict_from_url({url!r}) downloads a checkpoint; nothing is downloaded under "
                   "accelkit vendor-run --synthetic-data",
                   fix="download it beforehand and torch.load(<the file>), or keep the model's random initial weights")


def download_url_to_file(url: str, dst: str, *args: Any, **kwargs: Any) -> None:
    """``torch.hub.download_url_to_file`` for the run: a download, refused by name."""
    raise HubError(f"torch.hub.download_url_to_file({url!r}, {dst!r}) downloads a file; nothing is downloaded under "
                   "accelkit vendor-run --synthetic-data", fix=f"put the file at {dst} beforehand")


_REAL: dict[str, Any] = {}


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """``torch.hub.load`` / ``load_state_dict_from_url`` / ``download_url_to_file`` answered as above for the
    duration of the block, PyTorch's own afterwards."""
    names = {"load": load, "load_state_dict_from_url": load_state_dict_from_url,
             "download_url_to_file": download_url_to_file}
    saved = {n: getattr(torch.hub, n) for n in names}
    _REAL.update(saved)
    for n, fn in names.items():
        setattr(torch.hub, n, fn)
    try:
        yield
    finally:
        for n, fn in saved.items():
            setattr(torch.hub, n, fn)


__all__ = ["HubError", "download_url_to_file", "installed", "load", "load_state_dict_from_url"]
