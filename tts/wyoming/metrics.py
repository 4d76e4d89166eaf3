"""The Wyoming server's own Prometheus metrics (served on ``TTS_WYOMING_METRICS_PORT``).

Its syntheses count in the pipeline's metrics like any other source
(``tts_syntheses_total{source="wyoming"}``); these say what the protocol
layer refused and how often ``describe`` had to read the database.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

REFUSALS = Counter(
    "tts_wyoming_refusals",
    "Wyoming connections ended by a bound or a framing error, by the error code sent.",
    ["code"],
)
DESCRIBE_ANSWERS = Counter(
    "tts_wyoming_describe_answers",
    "Wyoming describe events answered, by whether the tenant's info was built for it or cached.",
    ["source"],
)
CONNECTIONS = Gauge("tts_wyoming_connections", "Open Wyoming connections (all listeners).")
