"""Settings for the test run: the project's settings, with test-friendly environment defaults.

Set here (not in conftest) because pytest-django imports settings before any
conftest runs. Server processes started by tests inherit this environment.
"""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("SECRET_KEY", "test-secret-key-not-for-production")
# Kokoro's voices from npm (make test fetches them there): in the checkout, not the throwaway data dir.
os.environ.setdefault(
    "TTS_KOKORO_VOICES_DIR", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "var", "npm")
)
if "VAR_DIR" not in os.environ:
    # A throwaway data dir (SQLite file, media, patched model copies), removed
    # when the test process that made it exits; server processes inherit it.
    os.environ["VAR_DIR"] = tempfile.mkdtemp(prefix="tts-test-var-")
    atexit.register(shutil.rmtree, os.environ["VAR_DIR"], ignore_errors=True)
# Under pytest-xdist (make test runs the suite in two workers) each worker gets its own data dir, inside
# the one its controller made, and its own Redis database, as pytest-django gives it a PostgreSQL
# database of its own (test_test_gw0, ...): tests write model files and empty Redis (the rate windows,
# the Celery queue), and must not do it to another worker. Once per worker: its servers and Celery
# workers load these settings again, with its variables.
_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if os.environ.get("TTS_TEST_PROCESS_OF") != _xdist_worker:
    os.environ["TTS_TEST_PROCESS_OF"] = _xdist_worker
    if _xdist_worker:
        os.environ["VAR_DIR"] = os.path.join(os.environ["VAR_DIR"], _xdist_worker)
        os.makedirs(os.environ["VAR_DIR"], exist_ok=True)
    if _xdist_worker.startswith("gw") and os.environ.get("REDIS_URL"):
        _base, _, _db = os.environ["REDIS_URL"].rstrip("/").rpartition("/")
        if not (_db.isdigit() and _base.count("/") >= 2):
            _base, _db = os.environ["REDIS_URL"].rstrip("/"), "0"
        os.environ["REDIS_URL"] = f"{_base}/{int(_db) + int(_xdist_worker[2:])}"
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ.setdefault("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
# No model warm-up/poller thread in the test process or the servers it starts,
# unless a test asks for one (tests/ops).
os.environ.setdefault("TTS_MODEL_LIFECYCLE", "false")
# Tests that commit rows make a new joe version every time; the session's daphne
# would otherwise keep an engine for each (~200 MB apiece) until it reached gigabytes.
os.environ.setdefault("TTS_ENGINE_MAX_LOADED", "3")
# Servers the tests stop drain briefly (tests/ops/test_graceful_shutdown.py sets its own).
os.environ.setdefault("TTS_SHUTDOWN_DRAIN_S", "2")
# The servers and workers the tests start keep glibc's dynamic mmap threshold, as this process does
# (tests/conftest.py), not the deployments' fixed 256 KiB: with that, every whole-sentence engine call
# maps and faults in its activations afresh, at twice the CPU, and those processes spent 245 s of system
# time in the suite's first pytest process (docs/benchmarks.md, "Test suite time"). Tests that measure
# a server's memory start it with the deployments' threshold (tests.servers.DEPLOYED_MALLOC).
os.environ.setdefault("TTS_MALLOC_MMAP_THRESHOLD", "0")

from ttsplatform.settings import *  # noqa: E402, F403

# Owners' passwords hashed in a millisecond, not 0.3 s (tests/password_hashing.py).
PASSWORD_HASHERS = ["tests.password_hashing.FewRoundsPBKDF2PasswordHasher"]
