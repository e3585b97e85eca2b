"""``accelkit vendor-run script.py [args]``: run a script written for a vendor's SDK, unchanged, on accelkit.

    accelkit vendor-run logreg.py compile -b 32 -p out/logreg.pef          # SambaFlow, as written
    accelkit vendor-run --synthetic-data mnist_poptorch.py --epochs 1      # PopTorch, MNIST made here
    python -m accelkit.vendor train_cstorch.py                             # the same launcher

For that one run the vendor module names (``poptorch``, ``sambaflow``, ``sambaflow.samba...``,
``cerebras.pytorch``, ``cerebras.framework.torch``, ``groqflow``) are answered by accelkit's facades
(:mod:`accelkit.vendor.aliases`: an import hook asked *after* every installed package, so a real SDK is
never shadowed), and the script runs as ``__main__`` with its own ``sys.argv`` (``runpy.run_path``).
``--synthetic-data`` swaps the downloads tutorials make (torchvision datasets, Hugging Face
checkpoints and ``torch.hub`` models, ``datasets``' text sets and metrics, tiktoken's encodings, torchaudio's
Speech Commands, the Imagenette archive and ImageNet devkit GroqFlow's demo helpers fetch) for data made here, and
says so
(:mod:`accelkit.vendor.synthetic`). A script written for transformers 4 that patches what transformers 5
removed gets it back for the run (:mod:`accelkit.vendor.hf_compat`).

At the end the launcher prints what the script's own output may not: each facade's modelled time and
report (labelled MODELLED; the script's numerics were real PyTorch on this CPU), and every option the
script set that only matters on real hardware, with what it does there. An error raised by accelkit, or by
PyTorch inside a vendor call, is printed as the call, the script's line and the fix (exit status 1),
not as a traceback; ``--traceback`` shows the full traceback too.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import re
import runpy
import shutil
import sys
import tempfile
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelkit.errors import AccelkitError
from accelkit.runtime import facade_log


@dataclass
class VendorRun:
    """What one run of a vendor script left behind (returned by :func:`run_script`)."""

    script: str
    exit_code: int
    served: list[str] = field(default_factory=list)  # vendor module names answered by accelkit
    reports: list[tuple[str, str]] = field(default_factory=list)  # (label, report text), MODELLED
    accepted: list[str] = field(default_factory=list)  # hardware-only options, each explained
    substitutions: list[str] = field(default_factory=list)  # what --synthetic-data replaced
    compat: list[str] = field(default_factory=list)  # transformers 4 attributes answered (accelkit.vendor.hf_compat)
    error: str | None = None
    output: str | None = None  # the script's own stdout, when run with quiet=True
    stopped: str = ""  # where --max-calls stopped the script (its calls until then ran, and are reported)
    children: list[str] = field(default_factory=list)  # the summaries of the Python processes the script started
    timers: list[str] = field(default_factory=list)  # the wall-clock timers the script itself reads (time.time...)

    def summary(self) -> str:
        lines = [f"accelkit vendor-run: {self.script} "
                 + ("stopped early, as asked" if self.stopped and self.exit_code == 0 else
                    "finished" if self.exit_code == 0 else f"stopped (exit status {self.exit_code})")]
        if self.stopped:
            lines.append(f"  {self.stopped}")
        if self.served:
            lines.append("  vendor modules answered by accelkit's simulation: " + ", ".join(self.served))
        for text in self.substitutions:
            lines.append(f"  synthetic data: {text}")
        for text in self.compat:
            lines.append(f"  written for transformers 4: {text}")
        for label, text in self.reports:
            lines.append(f"  {label}:")
            lines.extend("    " + line for line in text.splitlines())
        if self.reports and self.timers:
            lines.append(f"  the script's own timings ({', '.join(self.timers)}) and the rates it prints from them "
                         "measure this CPU computing the real numbers, not the accelerator: its time is the "
                         "MODELLED figure above")
        for text in self.accepted:
            lines.append(f"  {text}")
        for text in self.children:
            lines.append("  a Python process it started, run the same way (its summary, kept out of its own output):")
            lines.extend("    " + line for line in text.splitlines())
        return "\n".join(lines)


_TIMERS = re.compile(r"(?<![\w.])((?:time\.)?(?:time|perf_counter|monotonic)(?:_ns)?|timeit\.default_timer)\(\)"
                     r"|\b(tqdm)\(")


def _timers(text: str) -> list[str]:
    """The wall-clock timers a script reads (``time.perf_counter()``, a ``tqdm(...)`` bar's rate), in order."""
    found = [m.group(1) + "()" if m.group(1) else "tqdm's rate" for m in _TIMERS.finditer(text)]
    return list(dict.fromkeys(found))


def _script_line(exc: BaseException, script: str) -> str:
    """Where in the script ``exc`` was raised: ``file:line: code`` of its last frame in the script (the script's
    path where no frame is in it)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) == script]
    return f"{frames[-1].filename}:{frames[-1].lineno}: {(frames[-1].line or '').strip()}" if frames else script


def _script_error(exc: BaseException, script: str) -> str:
    """An accelkit error (or a PyTorch error inside a vendor call) as the call, the script's line and the fix."""
    where = _script_line(exc, script)
    return f"accelkit vendor-run: error at {where}\n{type(exc).__name__}: {exc}"


STAND_INS = {
    "torchvision": "torchvision's MNIST, FashionMNIST and CIFAR10, its common transforms and ResNet/ResNeXt models",
    "torchaudio": "torchaudio's SPEECHCOMMANDS (generated clips)",
    "tiktoken": "tiktoken's GPT-2 encoding, built here",
    "datasets": "Hugging Face datasets' small text sets, generated here",
    "evaluate": "Hugging Face evaluate's accuracy and F1",
    "wget": "wget.download, answered from data made here",
}
"""The packages a tutorial imports that ``--synthetic-data`` stands in for when they are not installed (what
:mod:`accelkit.vendor.synthetic` answers)."""


def _script_traceback(exc: BaseException, script: str) -> str:
    """The script's own error as Python prints it, from the script's frame (the launcher's and runpy's are noise)."""
    tb = exc.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != script:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))


def _missing_stand_in(exc: ModuleNotFoundError, script: str) -> str:
    """A package the script imports is not installed, and ``--synthetic-data`` would stand in for it: say so."""
    where = _script_line(exc, script)
    top = (exc.name or "").split(".")[0]
    return (f"accelkit vendor-run: error at {where}\n{top} is not installed here, so the script cannot import it.\n"
            f"  fix:   run it again with --synthetic-data (accelkit vendor-run --synthetic-data {Path(script).name} "
            f"...): accelkit then stands in for {STAND_INS[top]}, and downloads nothing; or install {top} "
            f"(pip install {top}) to run the real package")


# modules whose distribution has another name: what a requirements file lists for them
DISTRIBUTIONS = {"pkg_resources": "setuptools", "sklearn": "scikit-learn", "yaml": "PyYAML", "PIL": "Pillow",
                 "cv2": "opencv-python", "skimage": "scikit-image"}


def _missing_requirement(exc: ModuleNotFoundError, script: str) -> str | None:
    """A package the script (or a package it imports) needs is not installed, and a requirements file beside the
    script lists it (Graphcore's examples each have one): the line, and the install; None where no such file names
    it. A module shipped under another name is looked up by its distribution's (``pkg_resources``: setuptools)."""
    top = (exc.name or "").split(".")[0]
    if not top:
        return None
    if "." in (exc.name or "") and "__accelkit_facade__" in vars(sys.modules.get(top, sys)):
        # the package is there, as accelkit's stand-in, and lacks this module: installing the package is not the fix
        return (f"accelkit vendor-run: error at {_script_line(exc, script)}\n{exc.name} is not part of accelkit's "
                f"stand-in for {top} (--synthetic-data; {top} is not installed here)\n  fix:   install {top} beside "
                f"its PyTorch to use {exc.name}, or see README 'Vendor scripts' for what the stand-in answers")
    key = re.sub(r"[-_.]+", "-", DISTRIBUTIONS.get(top, top)).lower()
    for where_listed, spec in _listed_requirements(exc, script):
        name = re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0]
        git = re.match(r"git\+\S+/([^/@]+?)(\.git)?(@\S*)?$", spec)  # a bare git URL: named by its repository
        if git:  # PyTurboJPEG's repository gives the module turbojpeg
            repo = re.sub(r"[-_.]+", "-", git.group(1)).lower()
            name = key if repo in (key, "py" + key, "py-" + key, "python-" + key) else ""
        if name and re.sub(r"[-_.]+", "-", name).lower() == key:
            where = _script_line(exc, script)
            what = top if top not in DISTRIBUTIONS else f"{top} (part of {DISTRIBUTIONS[top]})"
            return (f"accelkit vendor-run: error at {where}\n{what} is not installed here; {where_listed} lists it "
                    f"({spec}).\n  fix:   pip install '{spec}' (its other requirements may pin versions of packages "
                    f"accelkit already has: install only what is missing)")
    return None


_IPU_TENSORFLOW = re.compile(r"^\s*(from tensorflow\.python import [^#\n]*\bipu\b|(from|import) tensorflow\.python\.ipu\b)",
                             re.M)
"""The imports of Graphcore's TensorFlow 2 for the IPU (``from tensorflow.python import ipu``)."""


def _ipu_tensorflow(exc: ModuleNotFoundError, script: str) -> str:
    """A script written for Graphcore's TensorFlow (it imports ``tensorflow.python.ipu``) stopped at ``import
    tensorflow``, which is not installed: the refusal ``tensorflow.python.ipu`` gives where TensorFlow is, said at
    the script's import line (installing TensorFlow from PyPI would not give the IPU module either)."""
    from accelkit.facades.poptorch.options import PopTorchError

    try:
        importlib.import_module("accelkit.facades.poptorch.tensorflow_ipu")  # raises its refusal, as on import
    except PopTorchError as refusal:
        return f"accelkit vendor-run: error at {_script_line(exc, script)}\n{type(refusal).__name__}: {refusal}"
    raise AssertionError("accelkit.facades.poptorch.tensorflow_ipu always refuses")  # pragma: no cover


def _listed_requirements(exc: BaseException, script: str) -> Iterator[tuple[str, str]]:
    """(where, requirement) for each requirement a requirements file beside the script (or in the folder above it)
    lists, then each the
    helpers package that raised ``exc`` declares in its ``setup.py`` (GroqFlow's ``demo_helpers``: its
    ``install_requires``), read as text: nothing of it runs."""
    here = Path(script).parent
    # beside the script, then in the folder above (Graphcore's PyTorch Geometric tutorials share one file)
    for req, whose in [*((r, "the script's") for r in sorted(here.glob("requirements*.txt"))),
                       *((r, f"{here.parent.name}/") for r in sorted(here.parent.glob("requirements*.txt")))]:
        for line in req.read_text(errors="replace").splitlines():
            spec = line.split("#")[0].strip()
            if spec:
                yield (f"{whose} {req.name}" if whose.endswith("'s") else f"{whose}{req.name}"), spec
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        file = Path(os.path.abspath(frame.filename))
        if str(file) == script or "site-packages" in file.parts or "dist-packages" in file.parts:
            continue
        # the package's folder and the project's above it (the Cerebras Model Zoo's is five levels above its
        # trainer's callbacks, with its requirements.txt beside its setup.py)
        # (releases before 2.3 have the requirements.txt and no setup.py)
        for folder in list(file.parents)[:6]:
            reqs = folder / "requirements.txt"
            for line in (reqs.read_text(errors="replace").splitlines() if reqs.is_file() else []):
                spec = line.split("#")[0].strip()
                if spec and not spec.startswith("-"):
                    yield f"{folder.name}/requirements.txt", spec
            setup = folder / "setup.py"
            if setup.is_file():
                text = setup.read_text(errors="replace")
                block = re.search(r"install_requires\s*=\s*\[(.*?)\]", text, re.DOTALL)
                for spec in re.findall(r"[\"']([^\"']+)[\"']", block.group(1) if block else ""):
                    yield f"{folder.name}'s setup.py", spec.strip()
                return


def _raising_package(exc: BaseException, script: str, skip: tuple[str, ...] = ()) -> tuple[str, str | None] | None:
    """(top-level module, its distribution's version or None) of the last frame of ``exc``'s traceback that lies in
    an installed package (not the script, accelkit or one of ``skip``); None when every frame is the script's."""
    import importlib.metadata

    roots = sorted((os.path.abspath(p) for p in sys.path if p), key=len, reverse=True)
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        file = os.path.abspath(frame.filename)
        root = next((r for r in roots if file.startswith(r + os.sep)), None)
        if file == script or root is None:
            continue
        name = Path(file[len(root) + 1:]).parts[0].removesuffix(".py")
        if name in ("accelkit", *skip):
            continue
        dists = importlib.metadata.packages_distributions().get(name, [name])
        try:
            return name, importlib.metadata.version(dists[0])
        except importlib.metadata.PackageNotFoundError:
            return name, None
    return None


def _numpy_2(exc: AttributeError, script: str) -> str | None:
    """An installed package the script uses calls a NumPy name that NumPy 2 removed (PyTorch Lightning 1.9's
    ``np.Inf``): the package, its version and the install that runs it; None for any other AttributeError."""
    if "NumPy 2.0 release" not in str(exc):
        return None
    found = _raising_package(exc, script, skip=("numpy",))
    package = "a package it imports" if found is None else " ".join(p for p in found if p)
    where = _script_line(exc, script)
    return (f"accelkit vendor-run: error at {where}\n{package} predates NumPy 2: {exc}\n"
            f"  fix:   pip install 'numpy<2' (accelkit and its PyTorch run on NumPy 1.26 too), or a release of "
            f"{package.split()[0]} made for NumPy 2")


def _version_clash(exc: ImportError, script: str) -> str | None:
    """An installed package the script uses imports a name that the installed release of another package no longer
    (or does not yet) have: transformers 4.26's ``from huggingface_hub import HfFolder`` beside huggingface_hub 1.x.
    Names both releases and the requirement the first declares on the second; None for any other ImportError."""
    import importlib.metadata

    m = re.match(r"cannot import name '([^']+)' from '([^'.]+)", str(exc))
    if m is None:
        return None
    symbol, module = m.groups()
    found = _raising_package(exc, script, skip=(module,))
    if found is None:
        return None
    package, version = found
    dists = importlib.metadata.packages_distributions().get(module, [module])
    try:
        have = importlib.metadata.version(dists[0])
    except importlib.metadata.PackageNotFoundError:
        return None
    norm = dists[0].lower().replace("_", "-")
    needs = ""
    try:
        pdist = importlib.metadata.packages_distributions().get(package, [package])[0]
        for req in importlib.metadata.requires(pdist) or []:
            head = re.split(r"[ ;<>=!~(\[]", req, maxsplit=1)[0]
            if head.lower().replace("_", "-") == norm and "extra ==" not in req:
                needs = re.sub(r"\s*\((.*)\)", r"\1", req.split(";")[0].strip())  # "hub (<1.0)" -> "hub<1.0"
    except importlib.metadata.PackageNotFoundError:
        pass
    pin = f"'{needs}'" if needs else f"the {dists[0]} release {package} {version or ''} was made with"
    return (f"accelkit vendor-run: error at {_script_line(exc, script)}\n{package} {version or ''} imports {symbol} "
            f"from {module}, which {dists[0]} {have} (installed) does not have"
            + (f" ({package} asks for {needs})" if needs else "") + "\n"
            f"  fix:   install {pin} beside it, where the script runs: pip install --target <folder> {pin} and put "
            "that folder first on PYTHONPATH for the run (accelkit keeps its own release)")


def _zoo_pydantic(exc: BaseException, script: str) -> str | None:
    """The Cerebras Model Zoo 2.x validates its config with pydantic and pins ``pydantic==2.8.2``: a later pydantic
    reads a field given both a default and ``...`` as required, so the zoo's optimizer and scheduler configs fail
    ("Field required" for ``params`` / ``optimizer``). Names the pin; None for any other error."""
    if type(exc).__name__ != "ValidationError" or "Field required" not in str(exc):
        return None
    if "cerebras/modelzoo/" not in Path(script).as_posix():
        return None
    import importlib.metadata

    try:
        have = importlib.metadata.version("pydantic")
    except importlib.metadata.PackageNotFoundError:
        return None
    if have == "2.8.2":
        return None
    return (f"accelkit vendor-run: error at {_script_line(exc, script)}\nthe Model Zoo's config did not validate with "
            f"pydantic {have} ({str(exc).splitlines()[0]}): the Model Zoo pins pydantic==2.8.2 (its requirements.txt), "
            "whose configs give the optimizer's params and a scheduler's optimizer their defaults\n"
            "  fix:   pip install 'pydantic==2.8.2' where the zoo runs (or pip install --target <folder> 'pydantic==2.8.2' "
            "and put that folder on PYTHONPATH for the run)")


def _pyg_extension(exc: ImportError, script: str) -> str | None:
    """PyTorch Geometric asks for one of its compiled extensions (pyg-lib or torch-sparse), which no registry this
    machine reaches provides, for a feature accelkit's stand-ins (:mod:`accelkit.vendor.pyg_sampling`: uniform
    neighbour sampling, ClusterData's partition) do not answer: what they are and what runs instead; None for any
    other ImportError."""
    if "pyg-lib" not in str(exc) and "torch-sparse" not in str(exc):
        return None
    where = _script_line(exc, script)
    return (f"accelkit vendor-run: error at {where}\n{type(exc).__name__}: {exc}\n"
            "  why:   PyTorch Geometric does this with a compiled extension, pyg-lib or torch-sparse, whose wheels come "
            "from data.pyg.org for each PyTorch build, not from PyPI: they cannot be installed here. accelkit answers "
            "NeighborLoader's uniform sampling and ClusterData's partition in PyTorch for the run, not this\n"
            "  fix:   run it where they install (pip install pyg-lib -f https://data.pyg.org/whl/torch-<version>+cpu.html); "
            "here, sample uniformly with NeighborLoader (no weights, times or disjoint subgraphs), train on the whole "
            "graph (poptorch_geometric.dataloader.DataLoader) or on small graphs (poptorch_geometric.FixedSizeDataLoader)")


def _missing_idx(exc: FileNotFoundError, script: str) -> str | None:
    """The script reads one of MNIST's IDX files (the tutorial's wget step leaves them) from a folder without them:
    the line, and the command that writes accelkit's in their place (:mod:`accelkit.vendor.idx`); None otherwise."""
    from accelkit.vendor.idx import FILES

    missing = Path(str(exc.filename or ""))
    names = {n for pair in FILES.values() for n in pair}
    if missing.name.removesuffix(".gz") not in names:
        return None
    where = _script_line(exc, script)
    return (f"accelkit vendor-run: error at {where}\nthe script reads MNIST's {missing.name} from {missing.parent}, "
            f"which does not have it: the tutorial's README downloads it (wget, gunzip).\n"
            f"  fix:   write accelkit's in its place, offline (generated digits in MNIST's IDX format), then run the "
            f"same command again: python -m accelkit.vendor.idx {missing.parent}")


def _user_module_files(name: str, root: Path) -> list[Path]:
    """Where the module ``name`` imported by a script may be: beside the script (``root``), else in a folder on
    the path that is the user's own code, not an installed package nor the standard library (GroqFlow's proof
    points import ``demo_helpers``, a folder of the clone put on the path). Nothing is imported to find it."""
    import importlib.machinery
    import sysconfig

    base = root.joinpath(*name.split("."))
    beside = [base.with_suffix(".py"), base / "__init__.py"]
    if any(f.is_file() for f in beside):
        return beside
    top, _, rest = name.partition(".")
    spec = importlib.machinery.PathFinder.find_spec(top) or _editable_spec(top)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return []
    installed = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    # an installed package: this environment's, or another's (pip's --user site, ~/.local/lib/.../site-packages)
    if any(Path(spec.origin).is_relative_to(p) for p in installed) or \
            {"site-packages", "dist-packages"} & set(Path(spec.origin).parts):
        return []
    if not rest:
        return [Path(spec.origin)]
    base = Path(spec.origin).parent.joinpath(*rest.split("."))
    return [base.with_suffix(".py"), base / "__init__.py"] if spec.submodule_search_locations else []


def _editable_spec(top: str) -> Any:
    """The spec of a top-level module that only an import hook on ``sys.meta_path`` finds: what ``pip install -e``
    with setuptools 64 or later writes for a package whose folder is not itself put on the path (GroqFlow's
    ``pip install -e demo_helpers``: an ``__editable__`` finder maps ``demo_helpers`` to the clone's folder). Only
    the finders are asked: nothing is imported; None where none of them knows the name."""
    import importlib.machinery

    for finder in sys.meta_path:
        if finder in (importlib.machinery.BuiltinImporter, importlib.machinery.FrozenImporter,
                      importlib.machinery.PathFinder) or not hasattr(finder, "find_spec"):
            continue
        try:
            spec = finder.find_spec(top, None)
        except Exception:  # noqa: BLE001 - a third-party hook that cannot answer is no answer
            continue
        if spec is not None:
            return spec
    return None


def _lifts_path(folder: Path) -> bool:
    """Whether a module beside the script puts the folder above it on the path (Graphcore's applications'
    ``import_helper.py``: ``sys.path.insert(0, str(Path(__file__).parent.parent))``), read as text."""
    return any(re.search(r"sys\.path\.(insert|append)\(", t) and re.search(r"\.parent\b|dirname\(", t)
               for t in (f.read_text(errors="replace") for f in folder.glob("*.py") if f.is_file()))


def _shadowing_modules(script: Path) -> dict[str, Any]:
    """The modules already imported here whose top-level name is that of a module or package of the script's own
    (beside it, or in the folder above where a helper of its puts that on the path), and that are not those files:
    name -> module, submodules included."""
    folders = [script.parent] + ([script.parent.parent] if _lifts_path(script.parent) else []) \
        + _appended_folders(script)
    own: set[str] = set()
    for folder in folders:
        own |= {f.stem for f in folder.glob("*.py")} | {d.name for d in folder.iterdir()
                                                          if d.is_dir() and (d / "__init__.py").is_file()}
    own.discard(script.stem)
    # never the standard library's, nor what this process runs on (a second torch or NumPy cannot be imported beside
    # the first): a file of the script's with such a name shadows nothing here
    own -= set(sys.stdlib_module_names) | {"torch", "numpy", "accelkit"}
    own = {n for n in own if not n.startswith("_")}
    out: dict[str, Any] = {}
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] not in own or module is None:
            continue
        file = os.path.abspath(getattr(module, "__file__", None) or "/")
        if not any(file.startswith(str(f) + os.sep) for f in folders):
            out[name] = module
    return out


def _appended_folders(script: Path) -> list[Path]:
    """The folders the script itself puts on the path by a relative literal (Graphcore's PyTorch Lightning CNNs:
    ``sys.path.append("../pytorch")``, the sibling application's code), resolved from the script's folder, where its
    README runs it; read as text, nothing run. Only folders outside any installed package."""
    import ast

    try:
        tree = ast.parse(script.read_text(errors="replace"))
    except (OSError, SyntaxError):
        return []
    found: list[Path] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("append", "insert") \
                and ast.unparse(n.func.value) == "sys.path" and n.args:
            arg = n.args[-1]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and not os.path.isabs(arg.value):
                folder = (script.parent / arg.value).resolve()
                if folder.is_dir() and not {"site-packages", "dist-packages"} & set(folder.parts):
                    found.append(folder)
    return found


def _own_sources(script: Path, limit: int = 50) -> list[str]:
    """The text of ``script`` and of the modules it imports that are its own code, and that those import (as
    ``python script.py`` resolves them from the script's folder: ``from configuration.gpt2_patch import ...``
    is ``configuration/gpt2_patch.py``; or from a folder of user code on the path), at most ``limit`` files."""
    import ast

    root, todo = script.parent, [script]
    # the folder above too, where a helper of the script's puts it on the path (Graphcore's applications'
    # `import import_helper`, which inserts the application's root, then `import utils, datasets, models`)
    lifts = _lifts_path(root)
    appended = _appended_folders(script)
    seen: set[Path] = set()
    texts: list[str] = []
    while todo and len(texts) < limit:
        f = todo.pop()
        if f in seen or not f.is_file():
            continue
        seen.add(f)
        text = f.read_text(errors="replace")
        texts.append(text)
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level]
        for name in names:  # a dotted name imports its packages too: `import models.loss` runs models/__init__.py
            for head in (".".join(name.split(".")[:i + 1]) for i in range(name.count(".") + 1)):
                todo += _user_module_files(head, root) or (_user_module_files(head, root.parent) if lifts else []) \
                    or next((found for extra in appended if (found := _user_module_files(head, extra))), [])
        for n in ast.walk(tree):  # relative imports inside the script's own packages: from .models import ...
            if isinstance(n, ast.ImportFrom) and n.level:
                base = f.parents[n.level - 1].joinpath(*(n.module or "").split(".")) if n.module else f.parents[n.level - 1]
                todo += [base.with_suffix(".py"), base / "__init__.py",
                         *(base / f"{a.name}.py" for a in n.names if not n.module)]
    return texts


def run_script(script: str | os.PathLike[str], argv: Sequence[str] = (), *, synthetic_data: bool = False,
               show_traceback: bool = False, cwd: str | os.PathLike[str] | None = None,
               quiet: bool = False, max_calls: int | None = None, summary_file: str | None = None) -> VendorRun:
    """Run ``script`` with ``argv`` as a vendor SDK would run it (see the module docstring); prints the
    end-of-run summary and returns it as a :class:`VendorRun`. ``cwd``: the folder the script runs in (apps
    write their PEFs and checkpoints there; the working directory is restored after). ``quiet``: keep the
    script's stdout in ``VendorRun.output`` and print nothing (a notebook then shows ``run.summary()``).
    ``max_calls``: stop the script when it is about to make its call number ``max_calls + 1`` of a compiled model
    (a PopTorch model, a SambaFlow session run, a GroqModel, a ``cstorch.trace`` step; a ``cbtorch.Session`` loop is
    one call): a tutorial that loops over a whole
    dataset shows its first calls and their modelled reports in seconds (``--max-calls``). ``summary_file``: write
    the end-of-run summary there instead of printing it (a child process's, for its parent run to print, so that the
    child's own output stays the script's)."""
    from accelkit.vendor import aliases, hf_compat, pyg_sampling, synthetic, torch_compat

    path = os.path.abspath(script)
    if not Path(path).is_file():
        raise AccelkitError(f"no script at {script}", fix="give the path of the vendor script to run")
    if max_calls is not None and (isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 1):
        raise AccelkitError(f"max_calls must be a whole number of calls, at least 1, not {max_calls!r}",
                            fix="e.g. --max-calls 20, or leave it out to run the script to its end")
    run = VendorRun(script=str(script), exit_code=0)
    saved_argv, saved_path, saved_cwd = sys.argv[:], sys.path[:], os.getcwd()
    # a module of this process that has the name of one of the script's own (its `datasets` package, an earlier
    # import of Hugging Face's here) is set aside for the run, as a fresh `python script.py` would not have it
    set_aside = _shadowing_modules(Path(path))
    for name in set_aside:
        del sys.modules[name]
    modules_before = set(sys.modules)
    saved_env = {k: os.environ.get(k) for k in ("PYTHONPATH", "ACCELKIT_VENDOR_CHILD")}
    children_dir = tempfile.mkdtemp(prefix="accelkit-children-")
    sys.argv = [path, *argv]
    # as `python script.py` sets it: the script's folder first (its helper modules, e.g. lenet's mnist_utils), and
    # not the working folder, which `python -m` and the accelkit command add: run from a clone of a vendor's
    # repository, that folder holds the vendor's own SDK sources (groqflow/), which would shadow the facades
    here = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", here)]
    sys.path.insert(0, os.path.dirname(path))
    wants_hub = synthetic_data and "from_pretrained" in Path(path).read_text(errors="replace")
    # torchvision is stood in for only where the script's folder, or its own code it imports, imports it (see
    # synthetic.installed)
    own = _own_sources(Path(path))
    sources = [f.read_text(errors="replace") for f in Path(path).parent.glob("*.py") if f.is_file()] + own \
        if synthetic_data else []
    # the Cerebras Model Zoo 2.x imports torchvision's transforms at start-up (data/vision/preprocessing.py), from
    # any of its scripts, and from `cszoo` (the console script `pip install -e modelzoo` writes: it imports
    # cerebras.modelzoo.cli.main)
    in_model_zoo = "cerebras/modelzoo/" in Path(path).as_posix() or any(
        re.search(r"^\s*(from|import) cerebras\.modelzoo\b", text, re.M) for text in own)
    wants_vision = any("torchvision" in text for text in sources) or (synthetic_data and in_model_zoo)
    wants_tiktoken = any("tiktoken" in text for text in sources)
    wants_audio = any("torchaudio" in text for text in sources)
    wants_wget = any(re.search(r"^\s*import wget\b", text, re.M) for text in sources)
    wants_graphs = any("torch_geometric" in text for text in sources)
    # PyTorch Geometric's compiled neighbour sampling and METIS partitioning (pyg-lib, torch-sparse: not on PyPI)
    # answered in PyTorch where they are not installed, with or without --synthetic-data (pyg_sampling.installed)
    wants_pyg = any("torch_geometric" in text for text in (sources or [Path(path).read_text(errors="replace"), *own]))
    # Hugging Face datasets, unless the script's folder (or the folder above, which a helper of the script's puts
    # on the path: Graphcore's applications; or a folder the script appends itself) has a datasets module of its own
    folders = [Path(path).parent] + ([Path(path).parent.parent] if _lifts_path(Path(path).parent) else []) \
        + _appended_folders(Path(path))
    wants_datasets = any(re.search(r"^\s*(import (datasets|evaluate)\b|from (datasets|evaluate)(\.\w+)* import)", text, re.M)
                         for text in sources) and not any(
        (f / "datasets.py").exists() or (f / "datasets").is_dir() for f in folders)
    # transformers 4 attributes the script (or a module of its own that it imports) patches: answered where gone
    compat_markers = [m for m in hf_compat.MARKERS if any(m in text for text in own)]
    captured = io.StringIO()
    try:
        # a Python process the script starts (subprocess.run(["python3", "other.py"])) runs through this launcher
        # too (accelkit/vendor/child/sitecustomize.py), with the same options; its summary comes back in children_dir
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(Path(__file__).parent / "child"), str(Path(__file__).parents[2]), saved_env["PYTHONPATH"])
            if p)
        os.environ["ACCELKIT_VENDOR_CHILD"] = json.dumps({"synthetic_data": synthetic_data, "max_calls": max_calls,
                                                          "summaries": children_dir})
        if cwd is not None:
            os.chdir(cwd)
        # hf_compat first: it imports transformers, which must not see the torchvision stand-in as the real one
        compat_cm: contextlib.AbstractContextManager[list[str]] = (
            hf_compat.installed(compat_markers) if compat_markers else contextlib.nullcontext([]))
        with compat_cm as compat, (
                facade_log.collecting(max_calls)), torch_compat.installed(), aliases.installed() as finder, (
                synthetic.installed(hf=wants_hub, vision=wants_vision, tiktoken=wants_tiktoken,
                                    datasets=wants_datasets, audio=wants_audio, wget=wants_wget,
                                    graphs=wants_graphs) if synthetic_data
                else contextlib.nullcontext()), (pyg_sampling.installed() if wants_pyg else contextlib.nullcontext()), (
                contextlib.redirect_stdout(captured) if quiet else contextlib.nullcontext()):
            for note in compat:
                print(f"accelkit vendor-run: {note}")
            run.compat = list(compat)
            try:
                runpy.run_path(path, run_name="__main__")
            except facade_log.CallBudgetSpent as stop:
                run.stopped = (f"stopped at its call {stop.spent + 1} ({stop.call}), as --max-calls {stop.spent} "
                               f"asks: the reports below cover its first {stop.spent} call(s)")
                print(f"accelkit vendor-run: {run.stopped}")
            except SystemExit as exc:
                run.exit_code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if exc.code not in (None, 0) and not isinstance(exc.code, int):
                    print(exc.code, file=sys.stderr)
            except (AccelkitError, facade_log.VendorCallError) as exc:
                run.exit_code, run.error = 1, _script_error(exc, path)
                if show_traceback:
                    traceback.print_exc()
                print(run.error, file=sys.stderr)
            except ModuleNotFoundError as exc:
                if (exc.name or "").split(".")[0] == "tensorflow" and any(
                        _IPU_TENSORFLOW.search(text) for text in own):
                    run.exit_code, run.error = 1, _ipu_tensorflow(exc, path)
                    print(run.error, file=sys.stderr)
                elif not synthetic_data and (exc.name or "").split(".")[0] in STAND_INS:
                    run.exit_code, run.error = 1, _missing_stand_in(exc, path)
                    print(run.error, file=sys.stderr)
                else:
                    run.exit_code, run.error = 1, _missing_requirement(exc, path) or _script_traceback(exc, path)
                    print(run.error, file=sys.stderr, end="" if run.error.endswith("\n") else "\n")
            except FileNotFoundError as exc:
                run.exit_code = 1
                from accelkit.vendor import chest_xray  # NIH's chest X-ray folder (Graphcore's ViT tutorial)

                run.error = (_missing_idx(exc, path) or chest_xray.missing(exc, _script_line(exc, path))
                             or _script_traceback(exc, path))
                print(run.error, file=sys.stderr, end="" if run.error.endswith("\n") else "\n")
            except Exception as exc:  # the script's own bug (not in a vendor call): its traceback is the help
                run.exit_code = 1
                run.error = ((_numpy_2(exc, path) if isinstance(exc, AttributeError) else None)
                             or (_pyg_extension(exc, path) if isinstance(exc, ImportError) else None)
                             or (_version_clash(exc, path) if isinstance(exc, ImportError) else None)
                             or _zoo_pydantic(exc, path)
                             # a registry that wraps the missing module in its own ImportError (the Model Zoo's)
                             or (_missing_requirement(exc.__cause__ or exc.__context__, path)  # type: ignore[arg-type]
                                 if isinstance(exc.__cause__ or exc.__context__, ModuleNotFoundError) else None)
                             or _script_traceback(exc, path))
                print(run.error, file=sys.stderr, end="" if run.error.endswith("\n") else "\n")
            run.served = list(dict.fromkeys(finder.served))
            # only this run's own: without --synthetic-data nothing was stood in, whatever an earlier run in this
            # process (a notebook's previous cell) said
            run.substitutions = synthetic.substitutions() if synthetic_data else []
            for label, report in facade_log.runs():
                try:
                    rep = report()
                except AccelkitError:
                    continue  # a facade object that never ran a step has nothing to report
                if getattr(rep, "steps", 1):
                    run.reports.append((label, str(rep)))
            run.accepted = [str(a) for a in facade_log.accepted()]
            run.timers = _timers(Path(path).read_text(errors="replace"))
    finally:
        # the script's own modules go with it (a later script in this process may have its own `datasets` or
        # `models`): those loaded from its folder or from a folder it put on the path
        own_roots = [os.path.dirname(path), *(os.path.abspath(p) for p in sys.path if p and p not in saved_path)]
        for name in [n for n in sys.modules if n not in modules_before]:
            file = os.path.abspath(getattr(sys.modules.get(name), "__file__", None) or "/")
            installed = any(part in ("site-packages", "dist-packages") for part in Path(file).parts) or \
                file.startswith((sys.prefix + os.sep, sys.base_prefix + os.sep))  # never an installed package's
            if not installed and any(file.startswith(r.rstrip(os.sep) + os.sep) for r in own_roots):
                del sys.modules[name]
        sys.modules.update(set_aside)
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.chdir(saved_cwd)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        done = sorted(Path(children_dir).glob("*.txt"), key=lambda f: f.stat().st_mtime)
        run.children = [f.read_text(errors="replace") for f in done]
        shutil.rmtree(children_dir, ignore_errors=True)
    if quiet:
        run.output = captured.getvalue()
    if summary_file is not None:
        tmp = Path(summary_file).with_suffix(".part")
        tmp.write_text(run.summary())
        tmp.replace(summary_file)
    elif not quiet:
        print(run.summary())
    return run


def _calls(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of calls (a whole number, at least 1)")
    return n


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The launcher's arguments (shared by ``accelkit vendor-run`` and ``python -m accelkit.vendor``)."""
    parser.add_argument("--synthetic-data", action="store_true",
                        help="answer the script's downloads (torchvision MNIST/FashionMNIST/CIFAR10, Hugging Face "
                             "from_pretrained, torch.hub.load of pytorch/vision, datasets' load_dataset / load_metric, "
                             "tiktoken's encodings, torchaudio's SPEECHCOMMANDS, GroqFlow's Imagenette archive, "
                             "PyTorch Geometric's Planetoid, TUDataset and QM9) with data "
                             "made on this machine; each substitution is announced")
    parser.add_argument("--traceback", action="store_true",
                        help="on an error, print Python's full traceback as well as the call and the fix")
    parser.add_argument("--max-calls", type=_calls, default=None, metavar="N",
                        help="stop the script before its call N+1 of a compiled model (a PopTorch model, a SambaFlow "
                             "session run, a GroqModel, a cstorch.trace step; a cbtorch.Session loop counts once) and "
                             "print the reports of the first N: a "
                             "tutorial that loops over a whole dataset, shown in seconds")
    parser.add_argument("script", help="the vendor script (e.g. a SambaFlow app, a PopTorch tutorial)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments, passed unchanged")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m accelkit.vendor",
        description="Run a script written for a vendor SDK (PopTorch, SambaFlow, Cerebras, GroqFlow) unchanged on "
                    "accelkit's simulated accelerators: real PyTorch numerics, modelled time.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run_script(args.script, args.args, synthetic_data=args.synthetic_data,
                      show_traceback=args.traceback, max_calls=args.max_calls).exit_code


__all__ = ["VendorRun", "add_arguments", "main", "run_script"]
