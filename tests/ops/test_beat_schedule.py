"""Every task beat schedules can be sent the way beat sends it (``task.apply_async``, with the task's
own options), not only by name: a task whose own ``time_limit`` is below the global soft limit
(``CELERY_TASK_SOFT_TIME_LIMIT``, hours) is refused by Celery before it reaches the broker
("soft_time_limit must be less than or equal to time_limit"), so beat never ran the reapers. Found
by running beat in the compose stack (make deploy-check)."""

from __future__ import annotations

from django.conf import settings

import tts.tasks  # noqa: F401  (registers the tasks, as a worker's autodiscovery does)
from ttsplatform.celery import app


def test_every_scheduled_task_has_a_soft_limit_within_its_hard_limit() -> None:
    assert settings.CELERY_BEAT_SCHEDULE
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        task = app.tasks[entry["task"]]
        hard = task.time_limit if task.time_limit is not None else app.conf.task_time_limit
        soft = task.soft_time_limit if task.soft_time_limit is not None else app.conf.task_soft_time_limit
        assert hard and soft, name
        # Celery's own check in Task.apply_async, which beat calls (send_task by name skips it).
        assert soft <= hard, f"{name}: soft limit {soft} s over the hard limit {hard} s; beat's apply_async refuses it"
