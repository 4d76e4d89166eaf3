"""Runs: the one owner of a synthesis from admission to its last byte.

Owns ``SynthesisRun`` (``run``: the history record, the characters reserved and charged,
every state change a method), the record's audio file (``record_audio``), heartbeats and
the reaper of dead processes' runs (``recovery``), the graceful drain on shutdown
(``shutdown``) and the synthesis metrics (``metrics``).

May import: engine time, cache, alignment, models and accounts' quota. Never the stages
or live speech (they drive a run; a run does not drive them).
"""
