"""Run inside a Python process a vendor script starts while ``accelkit vendor-run`` runs it (Graphcore's PopVision
walkthroughs run ``subprocess.run(["python3", "poptorch_mnist.py"])``): the launcher puts this folder on the child's
``PYTHONPATH`` with ``ACCELKIT_VENDOR_CHILD`` set, so the child's script runs through the same launcher, with the same
simulated SDKs and stand-ins; its end-of-run summary goes to the parent run, which prints it after its own (so the
child's output, which a parent may parse, stays the script's). A child started in any other way, or one that
runs no script file (``python -c``), is left alone."""

import json
import os
import sys


def _run_child() -> None:
    raw = os.environ.get("ACCELKIT_VENDOR_CHILD")
    script = sys.argv[0] if sys.argv else ""
    if not raw or not script or script in ("-c", "-m") or not os.path.isfile(script):
        return
    try:
        cfg = json.loads(raw)
        from accelkit.vendor import run_script
    except Exception as exc:  # this interpreter cannot import accelkit (another Python): the script runs as it is
        print(f"accelkit vendor-run: the child process {script} runs without the simulation ({exc})", file=sys.stderr)
        return
    summaries = cfg.get("summaries")
    where = os.path.join(summaries, f"{os.getpid()}.txt") if summaries and os.path.isdir(summaries) else None
    run = run_script(script, sys.argv[1:], synthetic_data=bool(cfg.get("synthetic_data")),
                     max_calls=cfg.get("max_calls"), summary_file=where)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(run.exit_code)  # the script has run: the interpreter must not run it a second time


_run_child()
