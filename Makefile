# `make test` and `make train` bootstrap .venv from nothing (Python 3.11 and PyPI access).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the RL libraries tested unchanged (Tianshou, TorchRL, Ray RLlib, OpenSpiel) live in a venv of their own:
# ray[rllib] pins gymnasium==1.2.2, while .venv keeps the newest gymnasium
IVENV := .venv-integrations
IBIN := $(IVENV)/bin
ISTAMP := $(IVENV)/.installed
# torch must be the CPU build: install it first from PyTorch's CPU index, then hold it there with a constraint.
# Where that index is out of reach, pip gives up on it within seconds (no retry) and takes $(TORCH) from PyPI
# and the local wheels it is configured with; the line after says which build was installed.
# strategic_reserve_env/extras.py (TORCH_REQUIREMENT, TORCH_CPU_INDEX) and docs/installation.md name the same
# command (tests/test_library.py).
TORCH ?= torch==2.13.0
TORCH_INDEX := https://download.pytorch.org/whl/cpu
TORCH_TIMEOUT_S := 5
PIP := $(BIN)/python -m pip
# pip byte-compiles every module it installs unless --no-compile (most of the time of an install, for torch, ray
# and the rest); Python compiles a module on its first import instead, and only what the tests import
INSTALL := install --no-compile
# $(call install_torch,PYTHON): the CPU build of $(TORCH) into PYTHON's venv, saying which build it got
define install_torch
	$(1) -m pip $(INSTALL) --timeout $(TORCH_TIMEOUT_S) --retries 0 "$(TORCH)" --index-url $(TORCH_INDEX) \
		|| { echo "make: $(TORCH_INDEX) is out of reach: $(TORCH) from PyPI"; $(1) -m pip $(INSTALL) "$(TORCH)"; }
	$(1) -c "import torch; print('make: torch', torch.__version__, 'CPU build' if torch.version.cuda is None else 'CUDA ' + torch.version.cuda + ' build')"
endef

.PHONY: test test-fast test-core test-wheel test-integrations lint docs train bench install clean

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml constraints-cpu.txt | $(BIN)/python
	$(call install_torch,$(BIN)/python)
	$(PIP) $(INSTALL) -c constraints-cpu.txt -e ".[train,test,docs,jax,mctx]"
	touch $@

$(IBIN)/python:
	$(PYTHON) -m venv $(IVENV)

$(ISTAMP): pyproject.toml constraints-cpu.txt | $(IBIN)/python
	$(call install_torch,$(IBIN)/python)
	$(IBIN)/python -m pip $(INSTALL) -c constraints-cpu.txt -e ".[train,test,integrations]"
	touch $@

# the core suite's two workers beside what is mostly one process or waiting on disk and network (the wheel check,
# then the integrations' venv being installed), so both cores stay busy; the integration tests after them, alone
# (ray's cluster is not started beside the core suite). Each part's output is shown whole when it ends; a failing
# part stops none of the others. .venv is made first (by `make lint`, or here): .venv-integrations' editable
# install never runs beside .venv's (both write the checkout's egg-info).
test: $(STAMP)
	$(MAKE) --jobs 2 --keep-going --output-sync=target test-core test-wheel $(ISTAMP)
	$(MAKE) test-integrations

# ruff (rules and format: [tool.ruff] in pyproject.toml) over the repository, mypy over the core ([tool.mypy])
lint: $(STAMP)
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .
	$(BIN)/python -m mypy

# the API reference site (mkdocs.yml): docstrings and docs/ as pages, every warning an error (a broken reference
# or link fails); the site is written to site/
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir site

# torch: one thread per process in the suites (two workers, their commands and the other parts of `make test`
# share the cores, where a second thread mostly waits; tests/wheel/check.sh does the same). Commands that take
# --threads set their own.
test-core test-fast test-integrations: export OMP_NUM_THREADS = 1

# worksteal: a worker that runs out of tests takes queued ones from the other (the suite's long tests vary a lot)
test-core: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist worksteal

# a contributor's loop: the core tests but those marked slow (over a few seconds each; `make test` runs them all)
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist worksteal -m "not slow"

# the wheel, installed (not editable) in a fresh venv, run from folders outside the checkout (tests/wheel/check.sh)
test-wheel: $(STAMP)
	bash tests/wheel/check.sh $(BIN)/python $(PYTHON)

test-integrations: $(ISTAMP)
	$(IBIN)/python -m pytest -p no:cacheprovider tests/integration

bench: $(STAMP)
	$(BIN)/python -m strategic_reserve_env bench

# `make train` starts over each time (--restart removes the previous run's state in runs/make-train);
# go on with a stopped or killed run with `python train.py --out runs/make-train --resume` alone.
train: $(STAMP)
	$(BIN)/python train.py --out runs/make-train --restart

clean:
	rm -rf $(VENV) $(IVENV) build site *.egg-info .pytest_cache .hypothesis
