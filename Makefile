# `make test` and `make train` bootstrap .venv from nothing (Python 3.11 and PyPI access).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# torch must be the CPU build: install it first, then hold it there with a constraint
TORCH ?= torch==2.13.0
PIP := $(BIN)/python -m pip

.PHONY: test train bench install clean

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml constraints-cpu.txt | $(BIN)/python
	$(PIP) install "$(TORCH)"
	$(PIP) install -c constraints-cpu.txt -e ".[train,test]"
	touch $@

test: $(STAMP)
	$(BIN)/python -m pytest -n 2

bench: $(STAMP)
	$(BIN)/python -m strategic_reserve_env bench

train: $(STAMP)
	$(BIN)/python train.py --out runs/make-train

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
