"""``insert(obj)``: what ``obj.save(force_insert=True)`` does for a model with a client-set
primary key, without building the INSERT again for every row.

Django's ``save()`` compiles its INSERT for each call (``SQLInsertCompiler``: every
field's SQL, placeholder and value, one by one). For the history row every
synthesis and every cache hit writes (30 columns) that was about 1 ms of CPU,
more than the statement takes to run. Here the statement is built once per
model and database connection vendor; each call only prepares the values, with
the fields' own ``pre_save`` and ``get_db_prep_save`` (so defaults, file fields,
``auto_now`` and JSON are handled as by ``save()``), sends ``pre_save`` and
``post_save`` as ``save()`` does, and marks the instance saved.

Only for models whose primary key has a value before the insert (a UUID default)
and whose fields hold plain values (no expressions); anything else raises
``ValueError`` rather than writing something ``save()`` would not.
"""

from __future__ import annotations

import functools

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model
from django.db.models.signals import post_save, pre_save

# (model, connection vendor) -> its INSERT statement.
_STATEMENTS: dict[tuple[type[Model], str], str] = {}


def _statement(model: type[Model], connection: BaseDatabaseWrapper) -> str:
    key = (model, connection.vendor)
    sql = _STATEMENTS.get(key)
    if sql is None:
        quote = connection.ops.quote_name
        columns = ", ".join(quote(str(f.column)) for f in _fields(model))
        placeholders = ", ".join(["%s"] * len(_fields(model)))
        sql = _STATEMENTS[key] = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({placeholders})"
    return sql


@functools.cache
def _fields(model: type[Model]) -> tuple[Field, ...]:  # type: ignore[type-arg]
    meta = model._meta
    return tuple(f for f in meta.local_concrete_fields if not f.generated)


def insert(obj: Model, *, using: str | None = None) -> None:
    """INSERT ``obj`` as ``obj.save(force_insert=True)`` would (same row, same signals)."""
    model = type(obj)
    meta = model._meta
    if obj.pk is None:
        raise ValueError(f"{meta.label}: insert() needs the primary key set before the insert")
    if meta.parents:
        raise ValueError(f"{meta.label}: insert() does not handle multi-table inheritance")
    using = using or router.db_for_write(model, instance=obj)
    connection = connections[using]
    obj._prepare_related_fields_for_save(operation_name="save")  # type: ignore[attr-defined]
    pre_save.send(sender=model, instance=obj, raw=False, using=using, update_fields=None)
    fields = _fields(model)
    values = []
    for field in fields:
        value = field.pre_save(obj, True)
        if hasattr(value, "resolve_expression"):
            raise ValueError(f"{meta.label}.{field.name}: insert() takes plain values, not expressions")
        values.append(field.get_db_prep_save(value, connection=connection))
    with connection.cursor() as cursor:
        cursor.execute(_statement(model, connection), values)
    obj._state.adding = False
    obj._state.db = using
    post_save.send(sender=model, instance=obj, created=True, update_fields=None, raw=False, using=using)
