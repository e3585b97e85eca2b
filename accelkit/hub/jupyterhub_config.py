# JupyterHub's configuration for an accelkit workshop room: `make hub` runs
#     jupyterhub -f accelkit/hub/jupyterhub_config.py
# Every setting comes from the environment (accelkit/hub/settings.py lists them). Add your own lines below.
import importlib.util
import sys
import types

# The hub needs accelkit.hub only, not the package root (which loads PyTorch: seconds of CPU and ~300 MB in a
# process that serves no model): register accelkit as a bare package so that its __init__ does not run here.
if "accelkit" not in sys.modules:
    _spec = importlib.util.find_spec("accelkit")
    if _spec is not None and _spec.submodule_search_locations is not None:
        _root = types.ModuleType("accelkit")
        _root.__path__ = list(_spec.submodule_search_locations)
        _root.__file__ = _spec.origin
        sys.modules["accelkit"] = _root

from accelkit.hub.config import load  # noqa: E402

c = get_config()  # type: ignore[name-defined]  # noqa: F821  (JupyterHub defines it)
load(c)
