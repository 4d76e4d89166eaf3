"""Shared fixtures: named tenants and keys (a, b), the joe voice, live daphne servers.

Tests that need PostgreSQL or Redis skip with a reason when those are not
configured, unless ``TTS_REQUIRE_SERVICES=1`` (as in CI), where they fail.

The run ends with the peak resident memory of the pytest process and of its
largest child (the daphne servers tests start), and fails when either passed
``TTS_TEST_MAX_RSS_MB`` (default 3072; 0 turns the check off): the suite must
fit a small CI machine. Engines a test loads are released when it ends, those
of the shared test voices when its module ends.
"""

from __future__ import annotations

import ctypes
import gc
import os
import resource
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.fixtures import *  # noqa: F403
from tests.fixtures import SESSION_SPECS
from tests.servers import *  # noqa: F403

if TYPE_CHECKING:
    from tts.inference.engine import ModelSpec
    from tts.inference.registry import EngineRegistry

# The suite is sized for the 2-CPU machine CI runs it on, whatever the host reports: each engine runs
# as many syntheses at once as there are CPUs (tts/inference/cpus.py), each with its activations, and
# the memory bound below holds for pools of 2. The servers the tests start inherit it.
os.environ.setdefault("TTS_CPUS", "2")


def pytest_configure(config: pytest.Config) -> None:
    """This process's malloc arenas bounded as a server's (TTS_MALLOC_ARENA_MAX's default), from the
    start: before, only once tests/ops/test_malloc_tuning.py had run. Not the servers' fixed mmap
    threshold: with it every engine call maps its activations afresh, and the suite ran 8 minutes
    longer (docs/benchmarks.md, "Memory of the test suite")."""
    from infra.malloc_tuning import tune_malloc

    tune_malloc(arena_max=2, mmap_threshold=0)


@pytest.fixture(autouse=True)
def _release_engines_loaded_by_the_test() -> Iterator[None]:
    """Engines a test loaded leave the process's one registry when it ends, but the test voices'.

    The registry keeps an engine per (model version id, sha256, engine). Tests
    that made their own versions (a new id each time) left an ONNX session
    (~200 MB) or a torch model behind each, and the suite grew to ~15 GB.
    The joe and Kokoro versions of ``tests/fixtures.py`` have one id per variant
    for the session (``SESSION_SPECS``): their engines stay for the module's
    next tests (``_release_session_engines_after_the_module``), unless the test
    changed what the version loads. Engines loaded before the test stay.
    """
    from tts.catalogue.engines import get_registry

    registry = get_registry()
    before = {(spec.id, spec.sha256, spec.engine) for spec in registry.loaded_specs()}
    yield
    loaded_here = [
        s
        for s in registry.loaded_specs()
        if (s.id, s.sha256, s.engine) not in before and not _is_a_session_engine(s)
    ]
    if loaded_here:
        _unload(registry, loaded_here)
        _return_freed_memory()


@pytest.fixture(autouse=True, scope="module")
def _release_session_engines_after_the_module() -> Iterator[None]:
    """The test voices' engines serve one module's tests, then go: modules that load engines
    of their own (tests/inference, tests/kokoro) must not find them still held."""
    yield
    from tts.catalogue.engines import get_registry

    registry = get_registry()
    _unload(registry, [s for s in registry.loaded_specs() if s.id in SESSION_SPECS])
    # Always, not only after an unload: engines the module made itself (tests/inference) never pass
    # through the registry, which shrinks the shared ONNX Runtime arena on unload, and what their runs
    # grew stayed held (about 480 MB after the windowed engine tests; the suite peaked at 3.4 GB).
    _return_freed_memory()


def _is_a_session_engine(spec: ModelSpec) -> bool:
    """``spec`` is the unchanged version a test fixture made (same files, same options)."""
    made = SESSION_SPECS.get(spec.id)
    return made is not None and made == spec and made.options == spec.options


def _unload(registry: EngineRegistry, specs: list[ModelSpec]) -> None:
    for spec in specs:
        # Dropped, not closed: a thread the test started may still be finishing with it.
        registry.unload(spec.id)


def _return_freed_memory() -> None:
    """Collect what was dropped, then give the shared ONNX Runtime arena's free regions and freed
    heap back to the OS (glibc keeps it otherwise, and RSS would not fall)."""
    from tts.inference.onnx_arena import shrink_shared_arena

    gc.collect()
    shrink_shared_arena()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc


@pytest.fixture(autouse=True)
def _fresh_lookup_caches() -> None:
    """Each test starts with no cached keys, voices or versions: rows of an earlier test's
    (rolled-back) transaction must not answer for this one's."""
    from infra.lookup_cache import clear_lookup_caches

    clear_lookup_caches()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from django.conf import settings

    has_pg = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
    has_redis = bool(settings.REDIS_URL)
    if os.environ.get("TTS_REQUIRE_SERVICES") == "1":
        if not has_pg or not has_redis:
            raise pytest.UsageError("TTS_REQUIRE_SERVICES=1 needs DATABASE_URL (PostgreSQL) and REDIS_URL set")
        import redis

        try:
            redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2).ping()
        except redis.RedisError as exc:
            raise pytest.UsageError(f"Redis at {settings.REDIS_URL} cannot be reached: {exc}") from exc
    for item in items:
        if item.get_closest_marker("postgres") and not has_pg:
            item.add_marker(pytest.mark.skip(reason="needs PostgreSQL: set DATABASE_URL=postgres://..."))
        if item.get_closest_marker("redis") and not has_redis:
            item.add_marker(pytest.mark.skip(reason="needs Redis: set REDIS_URL=redis://..."))


_PEAK_RSS = pytest.StashKey[tuple[float, float, int]]()


def _peak_rss_mb() -> tuple[float, float]:
    """Peak resident memory of this process and of its largest finished child (daphne servers, make run).

    This process's own peak is ``VmHWM``, which starts afresh at exec. ``ru_maxrss``
    (KiB on Linux) also counts the memory of the process it was started from, which
    Linux carries across fork and exec: a pytest that a test starts from a 3 GB one
    reported 3 GB of its own. The children's figure has only ``ru_maxrss``, so a
    child counts at least this process's peak at the time it was started.
    """
    own = _vm_hwm_mb()
    if own is None:
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def _vm_hwm_mb() -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _rss_bound_mb() -> int:
    raw = os.environ.get("TTS_TEST_MAX_RSS_MB", "")
    try:
        return int(raw) if raw else 3072
    except ValueError:
        raise pytest.UsageError(f"TTS_TEST_MAX_RSS_MB={raw!r} is not a whole number of MiB") from None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    own, children = _peak_rss_mb()
    bound = _rss_bound_mb()
    session.config.stash[_PEAK_RSS] = (own, children, bound)
    if bound > 0 and max(own, children) > bound and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if _PEAK_RSS in config.stash:
        own, children, bound = config.stash[_PEAK_RSS]
    else:
        (own, children), bound = _peak_rss_mb(), _rss_bound_mb()
    line = (f"peak RSS: pytest process {own:.0f} MiB, largest child process {children:.0f} MiB "
            f"(bound TTS_TEST_MAX_RSS_MB={bound})")
    if bound > 0 and max(own, children) > bound:
        terminalreporter.write_line(f"FAILED {line}: over the bound", red=True, bold=True)
    else:
        terminalreporter.write_line(line)
