"""Shared fixtures: named tenants and keys (a, b), the joe voice, live daphne servers.

Tests that need PostgreSQL or Redis skip with a reason when those are not
configured, unless ``TTS_REQUIRE_SERVICES=1`` (as in CI), where they fail.

The run ends with the peak resident memory of the pytest process and of its
largest child (the daphne servers tests start), and fails when either passed
``TTS_TEST_MAX_RSS_MB`` (default 3072; 0 turns the check off): the suite must
fit a small CI machine. Beside it, the tests after which this process held the
most more memory (VmRSS) and those that raised its peak (VmHWM) most: a failed
bound names the test to look at. Engines a test loads are released when it ends; those
of the shared test voices stay from module to module (loaded once per process) unless the
process holds more than ``_KEEP_SESSION_ENGINES_BELOW_MB`` after a module.
"""

from __future__ import annotations

import ctypes
import gc
import heapq
import os
import resource
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
    # pytest-xdist hands out whole files largest first unless told not to: in collection order, so
    # that each worker reads the rows the migrations seed before a test empties them
    # (_files_that_empty_the_database_last).
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    _empty_postgres_tables_by_delete()


def _empty_postgres_tables_by_delete() -> None:
    """After each transactional test Django empties every table (``flush``): on PostgreSQL one
    ``TRUNCATE`` of them all, 0.8-1 s on the 2-CPU machine (new files for each table and index),
    against a few milliseconds for ``DELETE`` of the few rows a test leaves; there were about 240
    such tests. The same empty tables; sequences are not reset either way (``reset_sequences`` keeps
    Django's ``TRUNCATE ... RESTART IDENTITY``). Django's foreign keys are deferrable: checked at the
    flush's commit, when every table is empty."""
    from django.conf import settings

    if not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        return  # SQLite's flush is a DELETE already
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(
        self: DatabaseOperations,
        style: Any,
        tables: Sequence[str],
        *,
        reset_sequences: bool = False,
        allow_cascade: bool = False,
    ) -> list[str]:
        if reset_sequences or allow_cascade or not tables:
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return ["SET CONSTRAINTS ALL DEFERRED;"] + [f"DELETE FROM {self.quote_name(table)};" for table in tables]

    DatabaseOperations.sql_flush = sql_flush  # type: ignore[method-assign, assignment]


@pytest.fixture(autouse=True)
def _release_engines_loaded_by_the_test() -> Iterator[None]:
    """Engines a test loaded leave the process's one registry when it ends, but the test voices'.

    The registry keeps an engine per (model version id, sha256, engine). Tests
    that made their own versions (a new id each time) left an ONNX session
    (~200 MB) or a torch model behind each, and the suite grew to ~15 GB.
    The joe and Kokoro versions of ``tests/fixtures.py`` have one id per variant
    for the session (``SESSION_SPECS``): their engines stay for the next tests
    (``_release_session_engines_when_memory_is_high``), unless the test changed
    what the version loads. Engines loaded before the test stay.
    """
    from tts.catalogue.engines import get_registry

    registry = get_registry()
    before = {(spec.id, spec.sha256, spec.engine) for spec in registry.loaded_specs()}
    yield
    loaded_here = [
        s for s in registry.loaded_specs() if (s.id, s.sha256, s.engine) not in before and not _is_a_session_engine(s)
    ]
    if loaded_here:
        _unload(registry, loaded_here)
        _return_freed_memory()


# The test voices' engines stay loaded from one module to the next while the process holds less than
# this after a module (its freed memory returned). The registry holds at most TTS_ENGINE_MAX_LOADED (3)
# engines, about 480 MB for joe on ONNX Runtime, Kokoro and joe on PyTorch; past this line they go, so
# that a module that builds engines of its own starts from what the suite itself holds and the
# process's peak stays under 2.5 GB. At 1.4 GB each worker passed it 2-4 times in the first pass
# (each a reload of them); at 1.7 GB never, with peaks of 1,986 and 2,098 MiB (docs/benchmarks.md).
_KEEP_SESSION_ENGINES_BELOW_MB = 1700


@pytest.fixture(autouse=True, scope="module")
def _release_session_engines_when_memory_is_high() -> Iterator[None]:
    """The test voices' engines serve every module's tests, as a server's serve every request, unless
    this process holds too much at a module's end: then they go, and the next test that speaks loads
    them again. Released after every module, as before, they were loaded about 70 times in the suite's
    first process, 0.4-0.7 s each on a quiet machine and twice that on a busy one (docs/benchmarks.md,
    "Test suite time")."""
    yield
    # Always: engines the module made itself never pass through the registry, which shrinks the
    # shared ONNX Runtime arena on unload, and what their runs grew stayed held (about 480 MB after
    # the windowed engine tests; the suite peaked at 3.4 GB).
    _return_freed_memory()
    if _proc_status_mb("VmRSS").get("VmRSS", 0.0) >= _KEEP_SESSION_ENGINES_BELOW_MB:
        _release_session_engines("over the line")


#: How often this process released the test voices' engines, by why (the summary says it: each
#: release after the first costs a load of them again).
_SESSION_RELEASES: dict[str, int] = {}


def _release_session_engines(why: str) -> None:
    from tts.catalogue.engines import get_registry

    registry = get_registry()
    held = [s for s in registry.loaded_specs() if s.id in SESSION_SPECS]
    if held:
        _unload(registry, held)
        _return_freed_memory()
        _SESSION_RELEASES[why] = _SESSION_RELEASES.get(why, 0) + 1


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


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _files_that_empty_the_database_last(items)
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


def _files_that_empty_the_database_last(items: list[pytest.Item]) -> None:
    """Every file with a test that commits (and so empties every table after it, the rows the
    migrations seed included) after every file without one, each file's tests in pytest-django's
    order. pytest-django runs such tests after the others; pytest-xdist (make test's two workers)
    hands each worker whole files in this order (not largest first: ``pytest_configure``), so on
    each worker too no test that reads seeded
    rows comes after a test that emptied them."""

    def empties_the_database(item: pytest.Item) -> bool:
        marker = item.get_closest_marker("django_db")
        committed = bool(marker and (marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences")))
        fixtures = getattr(item, "fixturenames", ())
        return committed or "transactional_db" in fixtures or "live_server" in fixtures

    emptying = {item.nodeid.split("::")[0] for item in items if empties_the_database(item)}
    items.sort(key=lambda item: item.nodeid.split("::")[0] in emptying)


# How many of the tests that grew memory most the summary lists.
_TOP_GROWTH = 5


@dataclass
class _MemoryGrowth:
    """Per test: what this process held more after it than before (VmRSS, setup to teardown, the module
    fixtures it set up or tore down included), and how far it raised the process's peak (VmHWM).
    Only the largest few are kept."""

    held: list[tuple[float, str]] = field(default_factory=list)
    peak: list[tuple[float, str]] = field(default_factory=list)

    def add(self, nodeid: str, held_mb: float, peak_mb: float) -> None:
        for kept, growth in ((self.held, held_mb), (self.peak, peak_mb)):
            if growth < 1:  # MiB: noise
                continue
            if len(kept) < _TOP_GROWTH:
                heapq.heappush(kept, (growth, nodeid))
            elif growth > kept[0][0]:
                heapq.heapreplace(kept, (growth, nodeid))

    def largest_held(self) -> list[tuple[float, str]]:
        return sorted(self.held, reverse=True)

    def largest_peak(self) -> list[tuple[float, str]]:
        return sorted(self.peak, reverse=True)


_GROWTH = pytest.StashKey[_MemoryGrowth]()


def _proc_status_mb(*fields: str) -> dict[str, float]:
    """``fields`` of /proc/self/status (VmRSS, VmHWM) in MiB; empty where there is no /proc."""
    found: dict[str, float] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                name, _, rest = line.partition(":")
                if name in fields:
                    found[name] = int(rest.split()[0]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """What this test grew: one read of /proc/self/status before its setup and one after its teardown."""
    before = _proc_status_mb("VmRSS", "VmHWM")
    yield
    after = _proc_status_mb("VmRSS", "VmHWM")
    if len(before) == 2 and len(after) == 2:
        growth = item.config.stash.setdefault(_GROWTH, _MemoryGrowth())
        growth.add(item.nodeid, after["VmRSS"] - before["VmRSS"], after["VmHWM"] - before["VmHWM"])


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
    return _proc_status_mb("VmHWM").get("VmHWM")


def _rss_bound_mb() -> int:
    raw = os.environ.get("TTS_TEST_MAX_RSS_MB", "")
    try:
        return int(raw) if raw else 3072
    except ValueError:
        raise pytest.UsageError(f"TTS_TEST_MAX_RSS_MB={raw!r} is not a whole number of MiB") from None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        # A pytest-xdist worker: the controller checks the bound and reports (pytest_testnodedown).
        own, children = _peak_rss_mb()
        growth = config.stash.get(_GROWTH, _MemoryGrowth())
        workeroutput["tts_memory"] = {
            "own": own,
            "children": children,
            "held": growth.largest_held(),
            "peak": growth.largest_peak(),
            "releases": dict(_SESSION_RELEASES),
        }
        return
    bound = _rss_bound_mb()
    workers = config.stash.get(_WORKERS, {})
    if workers:
        peaks = [max(w.own, w.children) for w in workers.values()]
    else:
        own, children = _peak_rss_mb()
        workers[""] = _ProcessMemory(own, children, config.stash.get(_GROWTH, _MemoryGrowth()), dict(_SESSION_RELEASES))
        config.stash[_WORKERS] = workers
        peaks = [max(own, children)]
    if bound > 0 and max(peaks) > bound and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@dataclass
class _ProcessMemory:
    """One pytest process's peaks (MiB) and the tests that grew it most: this process's, or each
    pytest-xdist worker's as it reported them when it finished."""

    own: float
    children: float
    growth: _MemoryGrowth
    #: The test voices' engines released, by why (``_release_session_engines``).
    releases: dict[str, int] = field(default_factory=dict)


_WORKERS = pytest.StashKey[dict[str, _ProcessMemory]]()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's controller: keep what a finished worker reported of its memory."""
    memory = getattr(node, "workeroutput", {}).get("tts_memory")
    if not memory:
        return
    growth = _MemoryGrowth(
        held=[(float(mb), str(nodeid)) for mb, nodeid in memory["held"]],
        peak=[(float(mb), str(nodeid)) for mb, nodeid in memory["peak"]],
    )
    workers = node.config.stash.setdefault(_WORKERS, {})
    releases = {str(why): int(n) for why, n in memory.get("releases", {}).items()}
    workers[str(node.gateway.id)] = _ProcessMemory(float(memory["own"]), float(memory["children"]), growth, releases)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if getattr(config, "workeroutput", None) is not None:
        return
    bound = _rss_bound_mb()
    workers = config.stash.get(_WORKERS, {})
    if not workers:
        own, children = _peak_rss_mb()
        growth = config.stash.get(_GROWTH, _MemoryGrowth())
        workers = {"": _ProcessMemory(own, children, growth, dict(_SESSION_RELEASES))}
    for worker, memory in sorted(workers.items()):
        _report_memory(terminalreporter, f"pytest worker {worker}" if worker else "pytest process", memory, bound)


def _report_memory(terminalreporter: pytest.TerminalReporter, name: str, memory: _ProcessMemory, bound: int) -> None:
    line = (
        f"peak RSS: {name} {memory.own:.0f} MiB, largest child process {memory.children:.0f} MiB "
        f"(bound TTS_TEST_MAX_RSS_MB={bound})"
    )
    held, peak = memory.growth.largest_held(), memory.growth.largest_peak()
    if bound > 0 and max(memory.own, memory.children) > bound:
        why = ""
        if held:
            why += f"; memory grew most after {held[0][1]} (+{held[0][0]:.0f} MiB held)"
        if peak:
            why += f"; the peak rose most in {peak[0][1]} (+{peak[0][0]:.0f} MiB)"
        terminalreporter.write_line(f"FAILED {line}: over the bound{why}", red=True, bold=True)
    else:
        terminalreporter.write_line(line)
    if memory.releases:
        said = ", ".join(f"{n} {why}" for why, n in sorted(memory.releases.items()))
        terminalreporter.write_line(f"  the test voices' engines released: {said}")
    for title, tests in (("held most more memory after them (VmRSS)", held), ("raised the peak most (VmHWM)", peak)):
        if tests:
            terminalreporter.write_line(f"tests that {title}:")
            for mb, nodeid in tests:
                terminalreporter.write_line(f"  +{mb:6.0f} MiB  {nodeid}")
