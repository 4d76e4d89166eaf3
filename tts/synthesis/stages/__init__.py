"""The pipeline's stages: one synthesis from the caller's fields to the bytes it is sent.

Owns the pipeline (``pipeline``: ``synthesis_prepare`` and ``synthesis_create``) and its
stages, in order, each a module taking the previous stage's value (``values``):
``parse`` (1) -> ``resolve`` (2) -> ``admit`` (3) -> ``prepare`` (4) -> ``lookup`` (5, the
cache) -> ``open_run`` (6) -> ``engine`` (7) -> ``deliver`` (8). Beside them, the rules a
stage applies: the speed and audio-length rule
(``estimate``), billing of prepared text (``prepared_billing``), stitching context
(``stitching``), a long-form job's texts through the same stages (``job``), and a dialogue's
turns, each in its own voice, as one request (``resolve.resolve_turns``, ``prepare.prepare_turns``).

A stage imports only the stages before it and the rooms below (runs, engine time, cache,
alignment, and the request and result types of ``tts.synthesis.request``).
docs/architecture.md lists where each rule lives.
"""
