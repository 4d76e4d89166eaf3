"""Alignment: when each word and character of a synthesis is heard.

Owns the engine's word timings of one segment (``timestamps``: ``SegmentTiming`` and the
timed engine call that reports them) and the character tracks built from them, in
ElevenLabs' shapes (``timeline``: ``AlignmentTimeline`` for a whole utterance,
``AlignmentChunk`` for a piece of audio, ``websocket_alignment`` for the WebSockets).

May import: inference, text and audio. Never another room of synthesis.
"""
