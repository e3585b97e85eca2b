"""The vendor SDKs' module names, answered by accelkit's facades for one run, never over a real SDK.

A vendor script imports ``poptorch``, ``sambaflow.samba``, ``cerebras.pytorch``, ``groqflow``...
:class:`VendorFinder` is an import hook placed *after* Python's own finders on ``sys.meta_path``: it is
asked about a name only when no installed package provides it, so a real SDK beside accelkit always
wins. For such a name it returns a small proxy module that hands every attribute to the accelkit facade
(``poptorch.trainingModel`` is ``accelkit.facades.poptorch.trainingModel``); proxies of packages have an empty
``__path__`` so that ``import sambaflow.samba.utils.argparser`` reaches this finder again.

A sub-module of an SDK is served only when the SDK's root was served by this finder: a real
``sambaflow`` that lacks some sub-module is never patched with accelkit's. ``installed()`` is used as a
context manager by the launcher, and removes the hook and every proxy when the script ends.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Iterator, Sequence
from typing import Any

# vendor module name -> the accelkit module that answers it (None: an empty namespace package)
ALIASES: dict[str, str | None] = {
    # Graphcore PopTorch (docs.graphcore.ai/projects/poptorch-user-guide): `import poptorch`
    "poptorch": "accelkit.facades.poptorch",
    "poptorch.optim": "accelkit.facades.poptorch.optim",
    "poptorch.enums": "accelkit.facades.poptorch",  # DataLoaderMode, OutputMode, ... (train_gpt2.py imports them so)
    # its C++ extension: only the user guide's error-handling names (TestErrorType, _throwTestError)
    "poptorch.poptorch_core": "accelkit.facades.poptorch.errors",
    # PopART's option enums (poptorch scripts pass them to opts._Popart.set) and popdist (poprun's helper)
    "popart": "accelkit.facades.poptorch.popart",
    "popdist": "accelkit.facades.poptorch.popdist",
    "popdist.poptorch": "accelkit.facades.poptorch.popdist",
    # PopTorch Geometric (Graphcore's PyTorch Geometric tutorials): its loaders; PyG itself is the real package
    "poptorch_geometric": "accelkit.facades.poptorch.geometric",
    "poptorch_geometric.dataloader": "accelkit.facades.poptorch.geometric",
    "poptorch_geometric.pyg_dataloader": "accelkit.facades.poptorch.geometric",
    "poptorch_geometric.fixed_size_options": "accelkit.facades.poptorch.geometric",
    "poptorch_geometric.collate": "accelkit.facades.poptorch.geometric",
    "poptorch_geometric.neighbor_loader": "accelkit.facades.poptorch.geometric",
    "poptorch_geometric.cluster_loader": "accelkit.facades.poptorch.geometric",
    # PopVision: libpvti (a script's own trace points, series and heatmaps) and pva's trace reader (the PopVision
    # tutorials system_analyser_instrumentation and reading_pvti_files)
    # Graphcore's applications' helper package (graphcore/examples-utils: load_lib compiles custom operators),
    # when not installed and only beside the simulated poptorch (see ONLY_WITH)
    "examples_utils": "accelkit.facades.poptorch.examples_utils",
    "examples_utils.load_lib_utils": "accelkit.facades.poptorch.examples_utils",
    # Horovod, which Graphcore's applications use between poprun's host processes: one process here, when Horovod
    # is not installed and only beside the simulated popdist (see ONLY_WITH)
    "horovod": None,
    "horovod.torch": "accelkit.facades.poptorch.horovod",
    "libpvti": "accelkit.facades.poptorch.pvti",
    "pva": "accelkit.facades.poptorch.pvti",
    # Hugging Face's IPU trainer (Graphcore's ViT tutorial): IPUConfig, IPUTrainingArguments and IPUTrainer on the
    # PopTorch facade (accelkit.facades.poptorch.optimum); its other modules refused at their import, saying what to
    # write instead; `optimum` itself only when it is not installed
    "optimum": None,
    "optimum.graphcore": "accelkit.facades.poptorch.optimum",
    **{f"optimum.graphcore.{m}": "accelkit.facades.poptorch.optimum" for m in (
        "ipu_configuration", "trainer", "training_args", "utils", "data", "data.data_collator")},
    **{f"optimum.graphcore.{m}": "accelkit.facades.poptorch.optimum_refused" for m in (
        "pipelines", "modeling_utils", "models", "generation", "diffusers", "trainer_seq2seq",
        "training_args_seq2seq", "quantization", "custom_ops")},
    # Graphcore's TensorFlow 2 for the IPU (its TensorFlow tutorials, ALCF's MNIST - Tensorflow2): refused at its
    # import, saying what to run instead (accelkit.facades.poptorch.tensorflow_ipu); where TensorFlow itself is not
    # installed the launcher refuses at `import tensorflow` with the same words
    "tensorflow.python.ipu": "accelkit.facades.poptorch.tensorflow_ipu",
    # SambaNova SambaFlow (github.com/sambanova/tutorials hello_world/logreg.py, lenet/lenet.py)
    "sambaflow": "accelkit.facades.samba.sdk",
    "sambaflow.samba": "accelkit.facades.samba",
    "sambaflow.samba.optim": "accelkit.facades.samba.optim",
    "sambaflow.samba.sambaloader": "accelkit.facades.samba.sambaloader",
    "sambaflow.samba.utils": "accelkit.facades.samba.utils",
    "sambaflow.samba.utils.argparser": "accelkit.facades.samba.utils",
    "sambaflow.samba.utils.pef_utils": "accelkit.facades.samba.utils",
    "sambaflow.samba.utils.dataset": None,
    "sambaflow.samba.utils.dataset.mnist": "accelkit.facades.samba.utils",
    "sambaflow.logging": "accelkit.facades.samba.sdk",
    "sambaflow.sambacollections": "accelkit.facades.samba.collections",  # generative_nlp's OrderedSet
    "sambaflow.samba.directives": "accelkit.facades.samba.directives",
    "sambaflow.samba.env": "accelkit.facades.samba.env",  # use_mock_samba_runtime (ALCF's starter apps)
    "sambaflow.samba.nn": None,
    "sambaflow.samba.nn.parameter": "accelkit.facades.samba.parameter",  # generative_nlp's SambaParameter
    "sambaflow.samba.utils.benchmark_acc": "accelkit.facades.samba.utils",  # AccuracyReport
    # Cerebras: cerebras.pytorch (`import cerebras.pytorch as cstorch`, release 2.x; `cerebras_pytorch` in 1.9)
    # and the CS-2's first API, cerebras.framework.torch (`import cerebras.framework.torch as cbtorch`)
    "cerebras": None,
    "cerebras.pytorch": "accelkit.facades.cerebras",
    "cerebras.pytorch.amp": "accelkit.facades.cerebras.amp",
    "cerebras.pytorch.metrics": "accelkit.facades.cerebras.metrics",
    "cerebras.pytorch.distributed": "accelkit.facades.cerebras.distributed",  # ClusterConfig, the streamers (gigaGPT)
    "cerebras.pytorch.optim": "accelkit.facades.cerebras.optim",
    "cerebras.pytorch.utils": "accelkit.facades.cerebras.utils",
    "cerebras.pytorch.utils.data": "accelkit.facades.cerebras.utils",
    "cerebras.pytorch.utils.tensorboard": "accelkit.facades.cerebras.utils",
    "cerebras_pytorch": "accelkit.facades.cerebras",
    # release 2.0's name for the same package; its Model Zoo's runner imports these sub-modules
    "cerebras_pytorch.amp": "accelkit.facades.cerebras.amp",
    "cerebras_pytorch.metrics": "accelkit.facades.cerebras.metrics",
    "cerebras_pytorch.distributed": "accelkit.facades.cerebras.distributed",
    "cerebras_pytorch.optim": "accelkit.facades.cerebras.optim",
    "cerebras_pytorch.utils": "accelkit.facades.cerebras.utils",
    "cerebras_pytorch.utils.data": "accelkit.facades.cerebras.utils",
    "cerebras_pytorch.utils.nest": "accelkit.facades.cerebras.zoo2",
    # releases 2.1-2.2's runner (run_cstorch_flow) reads a few of the 2.x helpers under both names
    "cerebras_pytorch.backend": "accelkit.facades.cerebras.zoo2",
    "cerebras_pytorch.nn": "accelkit.facades.cerebras.zoo2",
    "cerebras_pytorch.nn.functional": "accelkit.facades.cerebras.zoo2",
    "cerebras_pytorch.optim.lr_scheduler": "accelkit.facades.cerebras.optim",
    "cerebras_appliance.log": "accelkit.facades.cerebras.zoo2",
    "cerebras_appliance.environment": "accelkit.facades.cerebras.zoo2",
    "cerebras_appliance.utils": "accelkit.facades.cerebras.zoo2",
    "cerebras_appliance.utils.units": "accelkit.facades.cerebras.zoo2",
    "cerebras.appliance.run_utils": "accelkit.facades.cerebras.zoo2",
    "cerebras_pytorch.utils.tensorboard": "accelkit.facades.cerebras.utils",
    # the 2.x Model Zoo's Trainer (releases 2.3 on: `cszoo fit`, `python run.py CPU|CSX --params ...`): the helpers
    # it imports from cerebras.pytorch's sub-modules and the appliance client (accelkit.facades.cerebras.zoo2)
    **{f"cerebras.pytorch.{m}": "accelkit.facades.cerebras.zoo2" for m in (
        "backend", "backend.ltc_backend", "core.annotation", "experimental", "experimental.listener", "lib",
        "nn", "nn.functional", "sparse", "sparse.configure", "utils.call_once", "utils.data.utils",
        "utils.data.data_executor", "utils.data.sampler", "utils.kernel", "utils.num_kv_groups", "utils.utils")},
    "cerebras.pytorch.utils.nest": "accelkit.facades.cerebras.zoo2",
    "cerebras.pytorch.core": "accelkit.facades.cerebras.core",  # modes (the 2.3-2.4 zoos' runner)
    "cerebras.pytorch.distributed.cluster_resolver": "accelkit.facades.cerebras.distributed",
    "cerebras.pytorch.metrics.metric": "accelkit.facades.cerebras.metrics",
    "cerebras.pytorch.optim.optimizer": "accelkit.facades.cerebras.optim",
    **{f"cerebras.appliance{m}": "accelkit.facades.cerebras.zoo2" for m in (
        "", ".log", ".environment", ".errors", ".cluster", ".cluster.client", ".storage", ".storage.base_storage",
        ".utils", ".utils.classes", ".utils.debug_args", ".utils.file", ".utils.ini", ".utils.units")},
    # the evaluation harnesses the 2.x Trainer imports at start-up (EleutherAI's lm_eval, BigCode's bigcode_eval),
    # when not installed and only beside the simulated cerebras.pytorch (see ONLY_WITH)
    **{f"lm_eval{m}": "accelkit.facades.cerebras.harness" for m in (
        "", ".__main__", ".api", ".api.instance", ".api.model", ".api.registry", ".api.task", ".evaluator",
        ".evaluator_utils", ".tasks", ".utils", ".loggers", ".logging_utils", ".models", ".models.utils")},
    **{f"bigcode_eval{m}": "accelkit.facades.cerebras.harness" for m in ("", ".base", ".evaluator", ".tasks",
                                                                           ".utils")},
    "cerebras.framework": None,
    "cerebras.framework.torch": "accelkit.facades.cerebras.cbtorch",
    # the R1.7 Model Zoo's runner: the runtime as it answers with no CS system attached (its CPU path) and, once
    # cbtorch.initialize(cs_ip=...) started it, on the simulated CS-2 (its pipelined CS path); compile-only and the
    # appliance are refused, clearly
    "cerebras.framework.torch.amp": "accelkit.facades.cerebras.zoo_r1",
    "cerebras.framework.torch.core": "accelkit.facades.cerebras.zoo_r1",
    "cerebras.framework.torch.utils": "accelkit.facades.cerebras.utils",  # extract_loss
    "cerebras.workflow": "accelkit.facades.cerebras.zoo_r1",  # the CS path's performance-log reader
    "cerebras.workflow.python": "accelkit.facades.cerebras.zoo_r1",
    "cerebras.workflow.python.cs_perf_analyzer": "accelkit.facades.cerebras.zoo_r1",
    "cerebras.pb": "accelkit.facades.cerebras.zoo_r1",
    "cerebras.pb.stack": "accelkit.facades.cerebras.zoo_r1",
    "cerebras.pb.stack.autogen_pb2": "accelkit.facades.cerebras.zoo_r1",
    # the 2.0 Model Zoo's runner: cerebras_pytorch.core's modes, the appliance client's debug settings and NaN error
    "cerebras_pytorch.core": "accelkit.facades.cerebras.core",
    "cerebras_appliance.run_utils": "accelkit.facades.cerebras.appliance",
    "cerebras_appliance.errors": "accelkit.facades.cerebras.appliance",
    # the R1.9 Model Zoo's runner: the appliance client's AP_DISABLED (its CPU path); the rest of its protobuf
    # stack, the CS-system path's, refused
    "cerebras_appliance": "accelkit.facades.cerebras.zoo_r1",
    "cerebras_appliance.pb": "accelkit.facades.cerebras.zoo_r1",
    "cerebras_appliance.pb.stack": "accelkit.facades.cerebras.zoo_r1",
    "cerebras_appliance.pb.stack.autogen_pb2": "accelkit.facades.cerebras.zoo_r1",
    "cerebras_appliance.CSConfig": "accelkit.facades.cerebras.zoo_r1",
    # Groq GroqFlow (github.com/groq/groqflow): `from groqflow import groqit`
    "groqflow": "accelkit.facades.groqflow",
    # its build stages (groqflow/justgroqit/{export,compile}.py) and the ONNX half GroqFlow ships beside it,
    # onnxflow (onnxflow/justbuildit/{stage,export}.py), which GroqFlow's examples/sequence.py imports
    "groqflow.common": None,
    "groqflow.common.build": "accelkit.facades.groqflow.common",  # DEFAULT_CACHE_DIR (Groq's demo_helpers)
    "groqflow.justgroqit": None,
    "groqflow.justgroqit.export": "accelkit.facades.groqflow.stages",
    "groqflow.justgroqit.compile": "accelkit.facades.groqflow.stages",
    "onnxflow": None,
    "onnxflow.justbuildit": None,
    "onnxflow.justbuildit.stage": "accelkit.facades.groqflow.stages",
    "onnxflow.justbuildit.export": "accelkit.facades.groqflow.stages",
}

# the name whose presence as a real package means the vendor's SDK is installed
SDK_ROOTS = ("poptorch", "popart", "popdist", "libpvti", "pva", "optimum.graphcore", "tensorflow.python.ipu",
             "sambaflow", "cerebras.pytorch", "cerebras_pytorch", "cerebras.framework", "cerebras_appliance",
             "cerebras.appliance", "groqflow", "onnxflow")
# names answered only while the simulated SDK named beside them is in use (they are not vendor SDKs themselves)
# (any one of them)
ONLY_WITH: dict[str, tuple[str, ...]] = {
    "lm_eval": ("cerebras.pytorch",), "bigcode_eval": ("cerebras.pytorch",), "examples_utils": ("poptorch",),
    "horovod": ("poptorch", "popdist")}
PROXY_FLAG = "__accelkit_facade__"  # set on every proxy module: the accelkit module it stands for, or ""


def sdk_root(name: str) -> str | None:
    """The SDK root ``name`` belongs to (``sambaflow.samba.utils`` -> ``sambaflow``), else None."""
    return next((r for r in SDK_ROOTS if name == r or name.startswith(r + ".")), None)


def is_proxy(module: Any) -> bool:
    return isinstance(module, types.ModuleType) and PROXY_FLAG in vars(module)


class _ProxyModule(types.ModuleType):
    """A proxy whose facade's own attributes win over its sub-modules: importing ``cerebras.pytorch.backend`` (a
    module of helpers) leaves ``cstorch.backend`` the function, as a real package does when its ``__init__``
    imports the function after the sub-module."""

    def __setattr__(self, attr: str, value: Any) -> None:
        target = vars(self).get(PROXY_FLAG)
        if is_proxy(value) and target:
            own = vars(importlib.import_module(target)).get(attr)  # not its __getattr__, which may refuse
            if own is not None and not isinstance(own, types.ModuleType):
                return
        super().__setattr__(attr, value)


def _proxy(name: str, target: str | None) -> types.ModuleType:
    mod = _ProxyModule(name, f"accelkit's stand-in for {name}" + (f" (answered by {target})" if target else ""))
    vars(mod)[PROXY_FLAG] = target or ""
    mod.__path__ = []  # a package: its sub-modules are looked up (by this finder) too
    if target is not None:
        real = importlib.import_module(target)
        vars(mod)["__all__"] = list(getattr(real, "__all__", [n for n in vars(real) if not n.startswith("_")]))
        for attr in ("__version__", "__doc__"):
            if hasattr(real, attr):
                setattr(mod, attr, getattr(real, attr))

        def __getattr__(attr: str) -> Any:  # noqa: N807 - PEP 562 module attribute hook
            try:
                return getattr(real, attr)
            except AttributeError:
                raise AttributeError(
                    f"module {name!r} (accelkit's simulated {name.split('.')[0]}) has no attribute {attr!r}: "
                    f"accelkit's facade {target} does not provide it (see README, 'Vendor scripts')") from None

        vars(mod)["__getattr__"] = __getattr__
    return mod


class _ProxyLoader(importlib.abc.Loader):
    def __init__(self, target: str | None) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _proxy(spec.name, self.target)

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the proxy hands attributes to the accelkit module."""


class VendorFinder(importlib.abc.MetaPathFinder):
    """Answers the vendor names in :data:`ALIASES` that nothing installed answered (see the module docstring)."""

    def __init__(self) -> None:
        self.served: list[str] = []

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in ALIASES:
            return None
        needs = ONLY_WITH.get(fullname.split(".")[0])
        if needs is not None and not any(is_proxy(sys.modules.get(n)) for n in needs):
            return None
        root = sdk_root(fullname)
        if root is not None and root != fullname and not is_proxy(sys.modules.get(root)):
            return None  # the SDK is really installed (or not imported through us): never patch it
        self.served.append(fullname)
        return importlib.machinery.ModuleSpec(fullname, _ProxyLoader(ALIASES[fullname]), is_package=True)


@contextlib.contextmanager
def installed() -> Iterator[VendorFinder]:
    """Put the vendor names on the import path for the duration of the block, then take them away."""
    finder = VendorFinder()
    sys.meta_path.append(finder)  # last: every real finder is asked first
    try:
        yield finder
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n, m in sys.modules.items() if is_proxy(m)]:
            del sys.modules[name]


__all__ = ["ALIASES", "SDK_ROOTS", "VendorFinder", "installed", "is_proxy", "sdk_root"]
