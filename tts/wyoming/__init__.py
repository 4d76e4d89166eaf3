"""Wyoming: Home Assistant's protocol for local voice services, served by the platform.

This package owns the Wyoming TTS server (``manage.py wyoming_server``): TCP
listeners, each bound to one API key and so to its tenant and scopes
(:mod:`.listeners`); the event framing with its bounds on what a client may
send (:mod:`.framing`); what one client address may hold
(:mod:`.address_limits`); the events read ahead, bounded in bytes
(:mod:`.read_ahead`); the tenant's voices as Wyoming ``info`` and the voice
a request names (:mod:`.catalog`), that answer cached per tenant
(:mod:`.describe_cache`); the process's own metrics (:mod:`.metrics`); and
the protocol adapter, one per connection (:mod:`.handler`), which only
translates events: every synthesis goes through the utterance driver
(``tts.synthesis.live.driver``) and so through the one pipeline (quota,
rate limits, concurrency, fair engine time, cache, history with source
``wyoming``, metrics). The server process (:mod:`.server`) accepts, filters
client networks and bounds connections.

Protocol: docs/wyoming.md. Bounds: docs/limits.md.
"""
