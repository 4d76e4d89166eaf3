"""Engine time: handed out to tenants in turn, bounded, budgeted and charged.

Owns the fair scheduler of engine calls (``scheduler``, wired to settings in
``fairness``), the bound on syntheses queued for this process's engine (``admission``),
what a second of audio costs each engine (``cost``), the per-request and per-job
engine-seconds budget (``budget``) and the ledger that shares a host's engine time between
its processes over Redis (``host_share``).

May import: models, accounts' limits, inference and infra. Never another room of synthesis.
"""
