# JupyterHub's configuration for an accelkit workshop room: `make hub` runs
#     jupyterhub -f accelkit/hub/jupyterhub_config.py
# Every setting comes from the environment (accelkit/hub/settings.py lists them). Add your own lines below.
from accelkit.hub.config import load

c = get_config()  # type: ignore[name-defined]  # noqa: F821  (JupyterHub defines it)
load(c)
