# accelkit: one Makefile for set-up, the lab, the headless tour, tests and benchmarks.
# Every target that needs Python depends on `setup`, which is idempotent and quick when nothing changed.

PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip  # not .venv/bin/pip: a copied venv's scripts name the interpreter they were made with
STAMP  := $(VENV)/.accelkit-installed
# Plotly's mimetype renderer: JupyterLab draws it as a chart (the jupyterlab-plotly extension ships with
# plotly), and its JSON holds no random div id, so notebook outputs stay stable under nbval. ("json" would
# show every figure as a JSON tree.) The same setting serves `make lab`, the tour and the tests.
export PLOTLY_RENDERER ?= plotly_mimetype
export PYTHONHASHSEED = 0
export MPLBACKEND = Agg

.PHONY: help setup lab tour test test-fast test-browser lint bench clean-notebooks clean hub hub-room \
	hub-release-solutions hub-hide-solutions

help:
	@echo "make lab    - set up, then JupyterLab on notebooks/"
	@echo "make hub    - set up, then a workshop room: JupyterHub serving the notebooks to a class (root)"
	@echo "make hub-room / hub-release-solutions - the room's progress / let attendees apply the solutions"
	@echo "make tour   - set up, then the whole workflow headless on one zoo model"
	@echo "make test   - set up, then ruff, mypy, the unit tests and every notebook"
	@echo "make bench  - set up, then the benchmarks (prints figures)"
	@echo "make test-fast / test-browser - unit tests without the slow ones / the JupyterLab browser test"
	@echo "make clean-notebooks - strip execution counts and stray metadata from notebooks/"

$(VENV)/bin/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "accelkit needs Python 3.11 ($(PYTHON) not found)"; exit 1; }
	$(PYTHON) -m venv $(VENV)

# Re-install only when the pins or the package metadata change (torch from local disk with pip, the rest with uv:
# scripts/install_python.sh says why).
$(STAMP): $(VENV)/bin/python pyproject.toml constraints.txt scripts/install_python.sh
	scripts/install_python.sh dev
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $(STAMP)

# Debian's chromium drives the browser test (playwright cannot download its own browser here).
/usr/bin/chromium:
	scripts/install_chromium.sh

# The workshop room's proxy (npm) and setfacl (apt): scripts/install_hub_tools.sh.
CHP := $(VENV)/node_modules/.bin/configurable-http-proxy
# after chromium: both may run apt-get, which takes one lock
$(CHP) /usr/bin/setfacl: | $(VENV)/bin/python /usr/bin/chromium
	scripts/install_hub_tools.sh

# The Python packages and the system tools install side by side (apt and npm wait on the network, pip and uv on
# the disk): a fresh machine is ready in under two minutes, where one after the other took over five.
setup:
	@$(MAKE) --no-print-directory -j3 $(STAMP) /usr/bin/chromium $(CHP) /usr/bin/setfacl

# As root too; JUPYTER_PORT, JUPYTER_TOKEN, JUPYTER_IP and LAB_DIR are read from the environment
# (scripts/lab.sh); LAB_ARGS go to `jupyter lab` as they are, e.g. make lab LAB_ARGS=--no-browser
lab: setup
	scripts/lab.sh $(LAB_ARGS)

# A workshop room (as root): JupyterHub on the notebooks, one system user per attendee. HUB_PORT, HUB_IP,
# HUB_ADMIN, HUB_WORKSHOP_CODE, HUB_ADMIN_CODE, ... are read from the environment (README: "A workshop room");
# HUB_ARGS go to `jupyterhub` as they are.
hub: setup
	scripts/hub.sh $(HUB_ARGS)

hub-room: setup
	$(PY) -m accelkit.hub room

hub-release-solutions: setup
	$(PY) -m accelkit.hub release-solutions

hub-hide-solutions: setup
	$(PY) -m accelkit.hub hide-solutions

tour: setup
	$(PY) -m accelkit.tour

lint: setup
	$(VENV)/bin/ruff check accelkit tests benchmarks conftest.py
	$(VENV)/bin/mypy
	$(PY) -m accelkit.devtools.nbclean --check notebooks/

# Lint, then one pytest session on two workers (one per core): the unit tests, and every notebook run once with
# papermill (default parameters, solutions applied), its golden cells compared with nbval's rules, its exercises
# checked and its figures drawn in JupyterLab, all from that run. A test file, or a notebook's run, stays on one
# worker, the long ones first (conftest.py); the cache starts empty, as a learner's does.
# mypy (half a minute on one core) runs beside the tests' first minute and its verdict counts; the notebooks'
# hygiene is a test of its own (tests/test_notebooks.py), so `make lint`'s nbclean check is not repeated here.
PYTEST := $(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --durations=25
test: setup
	$(VENV)/bin/ruff check accelkit tests benchmarks conftest.py
	$(VENV)/bin/mypy > .mypy.log 2>&1 & mypy=$$!; \
	OMP_NUM_THREADS=1 ACCELKIT_CACHE_DIR=$$(mktemp -d) $(PYTEST) tests; rc=$$?; \
	wait $$mypy || { echo "mypy found problems:"; rc=1; }; cat .mypy.log; rm -f .mypy.log; exit $$rc

# The quick loop while developing: no notebooks, no slow tests.
test-fast: setup
	$(PY) -m pytest -q -p no:cacheprovider -m "not slow" tests

# JupyterLab in headless Chromium: the PlacementExplorer renders and follows its dropdown, and every notebook's
# charts draw with readable labels (notebook 00 run in the browser, the others executed first by papermill).
test-browser: setup
	$(PY) -m pytest -q -p no:cacheprovider -m browser tests/test_browser.py

# The benchmarks also compare with GenZ (the optional [peers] extra), installed once.
PEERS_STAMP := $(VENV)/.accelkit-peers-installed
$(PEERS_STAMP): $(STAMP)
	scripts/install_python.sh dev,peers
	@touch $(PEERS_STAMP)

bench: setup $(PEERS_STAMP)
	$(PY) benchmarks/run.py

clean-notebooks: setup
	$(PY) -m accelkit.devtools.nbclean notebooks/

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .accelkit_cache
