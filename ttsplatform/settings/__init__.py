"""Django settings: everything from environment variables, split by concern.

With nothing set, the platform runs on one laptop: SQLite, a local-memory
cache, an in-memory channel layer and in-process inference. ``DATABASE_URL``
and ``REDIS_URL`` scale it out. See docs/operations.md for every variable.

``core`` (paths, apps, middleware, static files, logging), ``deploy`` (database,
Redis, Celery, Wyoming listeners, process tuning), ``security`` (logins, cookies,
key hashing, ops access), ``engines`` (engines, voices, jobs, model lifecycle) and
``limits`` (every bound on a tenant's request, docs/limits.md), in that order: a
later module reads what an earlier one set.
"""

from ttsplatform.settings.core import *  # noqa: F403
from ttsplatform.settings.deploy import *  # noqa: F403
from ttsplatform.settings.engines import *  # noqa: F403
from ttsplatform.settings.limits import *  # noqa: F403
from ttsplatform.settings.matching import *  # noqa: F403
from ttsplatform.settings.security import *  # noqa: F403
