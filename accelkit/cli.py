"""``accelkit``: the workflow from a shell — profile, check, compile, run, box.

    accelkit profile mypkg.models:make_mlp --inputs 8x16:float32
    accelkit check   mypkg.models:make_mlp --target tsp            # exit 0 if ready, 1 if not
    accelkit compile mypkg.models:make_mlp --target sn40l --precision bf16 -o out/mlp.akp
    accelkit run     out/mlp.akp --steps 10                         # real numerics, modelled clock
    accelkit box     out/mlp.akp out/mlp-box                        # a self-contained ModelBox

A model is named by a *spec*: ``module:factory``, where ``factory()`` returns a model or
``(model, example_inputs)`` (an ``nn.Module`` object in the module works too), or ``zoo:NAME``
for a model of :mod:`accelkit.zoo`. ``--inputs`` builds random example inputs from shapes
(``8x16:float32``; integers take an exclusive upper bound, ``4x64:int64:1000``).

Exit codes: 0 done (``check``: the model is ready), 1 an accelkit error (cause, where, fix) or a
``check`` that found errors, 2 a usage error (a spec that does not import, a bad shape, an
unknown target). No traceback unless ``--debug``.

``compile`` records the spec in ``cli.json`` beside the artifact's manifest, so ``run`` can rebuild
the model later. ``run`` reads the artifact with ``ak.load`` (JSON + safetensors, no code); the
model's code comes from the spec, imported from your environment, never from the artifact folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from accelkit.runner import (  # noqa: F401 - re-exported: older ModelBoxes' run.py import guard from here
    CLI_JSON,
    DTYPE_ALIASES,
    SHAPE_HELP,
    LoadedModel,
    RunResult,
    UsageError,
    _need_inputs,
    _target,
    guard,
    inputs_from_shapes,
    load_model,
    parse_shape,
    random_tensor,
    recorded_cli,
    resolve_factory,
    run_artifact,
    trusted_spec,
)


def _cmd_profile(args: argparse.Namespace) -> int:
    from accelkit.profiler import profile

    loaded = load_model(args.spec, args.inputs, seed=args.seed)
    prof = profile(loaded.model, _need_inputs(loaded), runs=args.runs, training=args.training)
    print(prof.summary())
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from accelkit.porting import check

    target = _target(args.target)
    loaded = load_model(args.spec, args.inputs, seed=args.seed)
    report = check(loaded.model, _need_inputs(loaded), target=target, training=args.training)
    print(report)
    return 0 if report.ok else 1


def _cmd_compile(args: argparse.Namespace) -> int:
    from accelkit.workflow.compiling import compile

    target = _target(args.target)
    _precision(target, args.precision)
    loaded = load_model(args.spec, args.inputs, seed=args.seed)
    prog = compile(loaded.model, _need_inputs(loaded), target=target, precision=args.precision,
                   batch_size=args.batch_size, micro_batch=args.micro_batch, chips=args.chips, mode=args.mode,
                   training=args.training)
    out = prog.save(args.output)
    record = {"spec": args.spec, "inputs": args.inputs, "seed": args.seed,
              "note": "written by `accelkit compile`; `accelkit run` imports this spec only when you name it (--spec), or when it is a zoo:NAME model (the artifact holds no code)"}
    (Path(out) / CLI_JSON).write_text(json.dumps(record, indent=1) + "\n")
    print(prog.summary())
    print()
    print(prog.report.summary())
    run_hint = f"accelkit run {out}" + ("" if args.spec.startswith("zoo:") else f" --spec {args.spec}")
    print(f"\nwrote {out} (manifest.json, weights, {CLI_JSON}); run it with: {run_hint}")
    return 0


def _precision(target: str, precision: str) -> None:
    """A precision the target has, or a usage error naming --precision (before the model is built)."""
    from accelkit import hardware
    from accelkit.errors import PrecisionError

    try:
        hardware.get(target).peak(precision)
    except PrecisionError as exc:
        have = list(hardware.get(target).peak_flops)
        raise UsageError(f"{exc.message} (--precision is {precision}{' by default' if precision == 'bf16' else ''})",
                         fix=f"pass --precision {have[0]} (or another of {', '.join(have)})") from None


def _cmd_run(args: argparse.Namespace) -> int:
    from accelkit.box import BOX_YAML, run_box

    if (Path(args.artifact) / BOX_YAML).is_file():
        if args.inputs or args.batch_size:
            raise UsageError(f"{args.artifact} is a ModelBox: its parameters live in {BOX_YAML}",
                             fix=f"edit {Path(args.artifact) / BOX_YAML} (only --steps and --spec are given here)")
        print(run_box(args.artifact, steps=args.steps, spec=args.spec))
        return 0
    print(run_artifact(args.artifact, spec=args.spec, steps=args.steps or 1, batch_size=args.batch_size,
                       seed=args.seed, inputs=args.inputs))
    return 0


def _cmd_box(args: argparse.Namespace) -> int:
    from accelkit.box import make_box

    path = make_box(args.artifact, args.dir, spec=args.spec, steps=args.steps)
    print(f"wrote ModelBox {path}: edit {path / 'box.yaml'}, then `python {path / 'run.py'}` "
          f"or `accelkit run {path}`")
    return 0


# ---- the parser ---------------------------------------------------------------------------------
def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be ≥ 1")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"{text!r} is not a seed from 0 to 2**64 - 1 (torch's seeds are 64-bit)")
    return value


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: a subcommand that did not see --debug must not reset one given before it
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the full traceback of an error")
    model = argparse.ArgumentParser(add_help=False)
    model.add_argument("spec", help="the model: module:factory (returns a model or (model, example_inputs)) "
                                    "or zoo:NAME")
    model.add_argument("--inputs", action="append", metavar="SHAPE",
                       help=f"example inputs when the factory gives none (repeat for more): {SHAPE_HELP}")
    model.add_argument("--seed", type=_seed, default=0, help="seed for the weights and random inputs (default 0)")
    model.add_argument("--training", action="store_true", help="a training step (forward + backward) "
                                                               "instead of inference")
    target = argparse.ArgumentParser(add_help=False)
    target.add_argument("--target", "-t", required=True, help="a catalog chip: wse2, wse3, sn30, sn40l, "
                                                                "gc200, bow, tsp, a100, h100, host")

    parser = argparse.ArgumentParser(
        prog="accelkit", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Port PyTorch models to AI accelerators, simulated: numerics real, clocks modelled.",
        epilog="examples:\n  accelkit profile mypkg.models:make_mlp --inputs 8x16:float32\n"
               "  accelkit check zoo:braggnn --target tsp\n"
               "  accelkit compile mypkg.models:make_mlp --target sn40l -o out/mlp.akp\n"
               "  accelkit run out/mlp.akp --steps 10\n  accelkit box out/mlp.akp out/mlp-box\n\n"
               "exit codes: 0 ok, 1 accelkit error (or check found errors), 2 usage error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, helptext: str, example: str, parents: list[argparse.ArgumentParser]) -> Any:
        return sub.add_parser(name, parents=[common, *parents], help=helptext, description=helptext,
                              epilog=f"example:\n  {example}", formatter_class=argparse.RawDescriptionHelpFormatter)

    p = add("profile", "measure the model on this host: time per op and module, FLOPs, memory, what may not port",
            "accelkit profile mypkg.models:make_mlp --inputs 8x16:float32", [model])
    p.add_argument("--runs", type=_positive, default=3, help="timed runs (default 3)")
    p.set_defaults(func=_cmd_profile)

    p = add("check", "what must change for the model to run on a target, with the fix (exit 0 ready, 1 not)",
            "accelkit check mypkg.models:make_mlp --target tsp && echo ready", [model, target])
    p.set_defaults(func=_cmd_check)

    p = add("compile", "compile for a target and save the artifact; prints the plan and the modelled step",
            "accelkit compile mypkg.models:make_mlp --target sn40l --precision bf16 --batch-size 32 -o out/mlp.akp",
            [model, target])
    p.add_argument("--output", "-o", required=True, help="the artifact folder to write (e.g. out/mlp.akp)")
    p.add_argument("--precision", default="bf16", help="fp32, bf16, fp16, fp8 ... as the target has (default bf16)")
    p.add_argument("--batch-size", type=_positive, help="samples per step (default: the example inputs' batch)")
    p.add_argument("--micro-batch", type=_positive, help="training: samples per micro-batch (divides the batch)")
    p.add_argument("--chips", type=_positive, default=1, help="number of chips (default 1)")
    p.add_argument("--mode", default="auto", help="execution mode, e.g. pipelined, weight-streaming, on-chip, "
                                                  "hbm (default auto: the fastest that fits)")
    p.set_defaults(func=_cmd_compile)

    p = add("run", "run a compiled artifact (or a ModelBox folder): real PyTorch numerics, modelled time",
            "accelkit run out/mlp.akp --steps 10   (or --spec mypkg.models:make_mlp)", [])
    p.add_argument("artifact", help="an artifact folder written by compile, or a ModelBox folder")
    p.add_argument("--steps", type=_positive, help="inference steps (default 1; a box: its box.yaml)")
    p.add_argument("--spec", help="the model code, module:factory or zoo:NAME; needed unless cli.json names a "
                                  "zoo model (code named by a file in the folder is never imported by itself)")
    p.add_argument("--inputs", action="append", metavar="SHAPE", help=f"example inputs: {SHAPE_HELP}")
    p.add_argument("--batch-size", type=_positive, help="samples per step (default: the compiled batch)")
    p.add_argument("--seed", type=_seed, default=0, help="seed for the random inputs (default 0; a box: its box.yaml)")
    p.set_defaults(func=_cmd_run)

    p = add("box", "package an artifact as a ModelBox: the artifact, box.yaml (legal parameters) and run.py",
            "accelkit box out/mlp.akp out/mlp-box && python out/mlp-box/run.py", [])
    p.add_argument("artifact", help="an artifact folder written by compile")
    p.add_argument("dir", help="the box folder to create (must not exist, or be empty)")
    p.add_argument("--spec", help="the model code, module:factory or zoo:NAME; needed unless cli.json names a "
                                  "zoo model (code named by a file in the folder is never imported by itself)")
    p.add_argument("--steps", type=_positive, default=10, help="steps box.yaml starts with (default 10)")
    p.set_defaults(func=_cmd_box)

    p = add("vendor-run", "run a script written for a vendor SDK (PopTorch, SambaFlow, Cerebras, GroqFlow) "
            "unchanged on the simulated chips; prints each modelled time at the end",
            "accelkit vendor-run --synthetic-data logreg.py compile -b 32 -p out/logreg.pef", [])
    from accelkit.vendor import add_arguments

    add_arguments(p)
    p.set_defaults(func=_cmd_vendor_run)
    return parser


def _cmd_vendor_run(args: argparse.Namespace) -> int:
    from accelkit.vendor import run_script

    return run_script(args.script, args.args, synthetic_data=args.synthetic_data,
                      show_traceback=args.traceback or getattr(args, "debug", False),
                      max_calls=args.max_calls).exit_code


def main(argv: Sequence[str] | None = None) -> int:
    """The ``accelkit`` command; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or an argparse usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    prog = f"accelkit {args.command}"
    # The current folder is never put on the import path for the whole command: it may be a folder you
    # received (`cd box; accelkit run .`), and a `yaml.py` there would shadow the library. Only the module a
    # spec names is looked up there, while it is imported (see runner.resolve_factory).
    return guard(lambda: args.func(args), prog=prog, debug=getattr(args, "debug", False))

if __name__ == "__main__":
    sys.exit(main())
