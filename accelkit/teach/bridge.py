"""The bridge to the real machines: per vendor, the command a learner will type there, beside the accelkit
call that simulates it, with the source of the real command.

``docs/real_machines.md`` is generated from :data:`BRIDGE` by :func:`markdown` (a test keeps them equal), and
notebook 10 runs the SambaFlow-style example app through its compile -> run -> test commands with
:func:`run_app`. Where a source could not be re-read for this table it says ``unconfirmed``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Command:
    step: str      # compile, run, test, ...
    real: str      # what you type on the real system
    accelkit: str  # what simulates it here
    note: str = ""


@dataclass(frozen=True)
class Vendor:
    name: str
    target: str    # the accelkit target it maps to
    commands: tuple[Command, ...]
    sources: tuple[str, ...]
    launcher: str = ""  # how jobs reach the machine


SAMBANOVA = Vendor(
    "SambaNova (SambaFlow)", "sn30 / sn40l",
    (
        Command("compile", "python app.py compile -b 64 -mb 4 --pef-name=app_b64",
                "python examples/rdu_classifier_app.py compile -b 64 -mb 4 -p out/app_b64.pef",
                "writes the PEF for batch 64; a new -b means a new compile (minutes on the real machine)"),
        Command("run", "python app.py run -b 64 -mb 4 --pef=out/app_b64/app_b64.pef",
                "python examples/rdu_classifier_app.py run -b 64 -mb 4 -p out/app_b64.pef",
                "the same -b as the compile"),
        Command("test", "python app.py test -b 64 -mb 4 --pef=out/app_b64/app_b64.pef",
                "python examples/rdu_classifier_app.py test -b 64 -mb 4 -p out/app_b64.pef",
                "compares the RDU's outputs with the CPU's"),
        Command("measure-performance", "python app.py measure-performance -b 64 --pef=out/app_b64/app_b64.pef",
                "python examples/rdu_classifier_app.py measure-performance -b 64 -p out/app_b64.pef",
                "accelkit's figures are MODELLED"),
        Command("inference", "python app.py compile --inference -b 64 --pef-name=app_inf",
                "python examples/rdu_classifier_app.py compile --inference -b 64 -p out/app_inf.pef"),
    ),
    ("SambaNova SambaFlow developer guide, compiler arguments (--pef-name, --inference): "
     "https://docs.sambanova.ai/developer/1.16/compiler-reference.html",
     "SambaNova, Run example applications (compile / run with --pef): "
     "https://docs.sambanova.ai/developer/1.15/run-examples.html",
     "ALCF AI Testbed user guide, SambaNova: jobs via srun/sbatch, UNet compile times 358-1,844 s: "
     "https://docs.alcf.anl.gov/ai-testbed/sambanova/ (as the guide stood when this table was written; the page changes with each SDK release)"),
    "srun python app.py compile ... (interactive) or sbatch --output=run.log job.sh (batch), as on ALCF's SN30",
)

CEREBRAS = Vendor(
    "Cerebras (modelzoo, cerebras.pytorch)", "wse2 / wse3",
    (
        Command("validate", "python run.py CSX --mode train --params configs/params.yaml --validate_only",
                "ak.check(model, inputs, target='wse2')",
                "checks the graph compiles for the wafer without running the full compile"),
        Command("compile", "python run.py CSX --mode train --params configs/params.yaml --compile_only",
                "ak.compile(model, inputs, target='wse2', training=True)",
                "batch size, sequence length and precision come from the YAML; change them, compile again"),
        Command("train", "python run.py CSX --mode train --params configs/params.yaml --model_dir out/",
                "accelkit vendor-run examples/vendor/cstorch_loop.py",
                "the current API: cstorch.backend, cstorch.compile, @cstorch.trace, DataExecutor"),
        Command("check on CPU", "python run.py CPU --mode train --params configs/params.yaml",
                "accelkit vendor-run examples/vendor/cstorch_gpt.py --backend CPU",
                "cstorch's CPU backend (gigaGPT: backend: \"CPU\"): the same script in fp32 on the host, timed "
                "there; nothing of the wafer is modelled"),
        Command("YAML", "train_input: {batch_size: 256}; model: {...}; optimizer: {...}; runconfig: {...}",
                "ak.Session(model, target='wse2', batch_size=256, ...)"),
    ),
    ("Cerebras Model Zoo README and CLI overview: https://github.com/Cerebras/modelzoo",
     "ALCF AI Testbed user guide, Cerebras: run.py with --compile_only / --validate_only and a params YAML: "
     "https://docs.alcf.anl.gov/ai-testbed/cerebras/ (as the guide stood when this table was written; the page changes with each SDK release)"),
    "run from a login node: run.py submits to the Wafer-Scale Cluster itself",
)

GRAPHCORE = Vendor(
    "Graphcore (PopTorch, PopRun)", "gc200 / bow",
    (
        Command("compile + run", "python train.py  # poptorch.trainingModel(model, opts) compiles on first call",
                "accelkit vendor-run examples/vendor/poptorch_basics.py"),
        Command("device iterations", "opts.deviceIterations(16)",
                "poptorch.Options().deviceIterations(16) in accelkit.facades.poptorch",
                "16 batches per host round trip: fewer host-IPU exchanges per sample"),
        Command("replication", "poprun --num-instances=2 --num-replicas=4 python3 train.py",
                "opts.replicationFactor(4) / ak.Session(..., chips=4, parallel=ak.Parallel(data=4))",
                "4 copies of the model, each on its own IPUs, gradients all-reduced"),
        Command("gradient accumulation", "opts.Training.gradientAccumulation(8)",
                "poptorch.Options().Training.gradientAccumulation(8)",
                "8 micro-batches per weight update: a bigger effective batch without more memory"),
    ),
    ("Graphcore tutorials, PopDist/PopRun example (poprun --num-instances --num-replicas): "
     "https://github.com/graphcore/tutorials/blob/sdk-release-2.1/feature_examples/tensorflow/popdist",
     "PopTorch user guide, Options (deviceIterations, replicationFactor, Training.gradientAccumulation): "
     "https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/reference.html",
     "Lightning IPU docs, device_iterations and throughput: "
     "https://lightning.ai/docs/pytorch/1.8.4/accelerators/ipu_advanced.html"),
    "poprun launches the instances and replicas; on ALCF's Graphcore system jobs go through Slurm",
)

GROQ = Vendor(
    "Groq (GroqFlow)", "tsp",
    (
        Command("build", "gmodel = groqit(model, inputs)", "from accelkit.facades.groqflow import groqit; groqit(model, inputs)",
                "compiles and assembles for the TSP; the build is cached by name and input shapes"),
        Command("run", "gmodel(**inputs)", "gmodel(**inputs)  # real numerics on this CPU"),
        Command("estimate", "gmodel.estimate_performance()", "gmodel.estimate_performance()  # MODELLED",
                "the real one is also an estimate: the schedule is static, so latency is known at compile time"),
        Command("multi-chip", "groqit(model, inputs, num_chips=4)", "groqit(model, inputs, num_chips=4)"),
    ),
    ("GroqFlow user guide (groqit arguments, build cache, GroqModel methods): "
     "https://github.com/groq/groqflow/blob/main/docs/user_guide.md",
     "GroqFlow examples, estimate_performance: https://github.com/groq/groqflow/tree/main/examples"),
    "groqit runs where GroqWare is installed; ALCF's GroqRack nodes are reached through its job scheduler",
)

BRIDGE = (SAMBANOVA, CEREBRAS, GRAPHCORE, GROQ)


def markdown() -> str:
    """docs/real_machines.md: every vendor's commands beside accelkit's, with sources."""
    out = ["# On the real machines", "",
           "What you type on each vendor's system, beside the accelkit call that simulates it here. accelkit's",
           "numerics are real and its times MODELLED; the real systems also make you wait for a compile (minutes:",
           "ALCF reports SambaNova UNet compiles of 358-1,844 s) and compile again when the batch size or an input",
           "shape changes (`accelkit.compiler.compile_time` models both). Generated from `accelkit/teach/bridge.py`;",
           "regenerate with `python -m accelkit.teach.bridge > docs/real_machines.md`.", ""]
    for v in BRIDGE:
        out += [f"## {v.name} (accelkit target `{v.target}`)", "", f"Launch: {v.launcher}.", "",
                "| step | on the real machine | here | note |", "|---|---|---|---|"]
        out += [f"| {c.step} | `{c.real}` | `{c.accelkit}` | {c.note} |" for c in v.commands]
        out += ["", "Sources:", "", *(f"- {s}" for s in v.sources), ""]
    return "\n".join(out)


def run_app(app: str | os.PathLike[str], *args: str, cwd: str | os.PathLike[str] | None = None,
            timeout_s: float = 300) -> str:
    """Run a SambaFlow-style app as ``python app.py ARGS`` would on the real machine (here against accelkit's
    facade) and return what it printed; a failing command raises with its output."""
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    proc = subprocess.run([sys.executable, str(Path(app).resolve()), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError(f"python {Path(app).name} {' '.join(args)} failed (exit {proc.returncode}):\n"
                           f"{proc.stdout}{proc.stderr}")
    return proc.stdout


if __name__ == "__main__":
    print(markdown(), end="")
