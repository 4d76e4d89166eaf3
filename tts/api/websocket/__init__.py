"""The WebSocket protocols: ElevenLabs' ``stream-input`` (``consumers``) and multi-context
(``multi_context``) sockets, their shared message parsing (``protocol``) and job progress
(``jobs``). Each consumer is an adapter: it reads frames and hands text to the utterance
driver of ``tts.synthesis.live``, which Wyoming shares.

Named by ``tts.routing``; imports the REST API's serializers and everything below it.
"""
