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

from ttsplatform.settings import *  # noqa: F403

# Owners' passwords hashed in a millisecond, not 0.3 s (tests/password_hashing.py).
PASSWORD_HASHERS = ["tests.password_hashing.FewRoundsPBKDF2PasswordHasher"]
