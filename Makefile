# make run: a working server on a bare machine. make test: the whole suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The CPU build of PyTorch, pinned: a bare "torch" can pull a multi-GB CUDA build.
TORCH_CPU := torch==2.13.0
HOST ?= 127.0.0.1
PORT ?= 8000

export DEBUG ?= true

.PHONY: run test lint typecheck bench install install-dev worker clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q $(TORCH_CPU)
	$(BIN)/pip install -q -e '.[dev,torch]'
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

run: $(VENV)/.installed
	$(BIN)/python manage.py migrate --noinput -v 0
	$(BIN)/python manage.py setup_demo --host http://$(HOST):$(PORT)
	@echo "Serving on http://$(HOST):$(PORT)  (dashboard /, admin /admin/, API /v1/...)"
	$(BIN)/daphne -b $(HOST) -p $(PORT) ttsplatform.asgi:application

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check . || true

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy accounts tts ttsplatform

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
