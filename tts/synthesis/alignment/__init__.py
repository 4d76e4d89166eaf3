"""Alignment: when each word and character of a synthesis is heard.

Owns the engine's word timings of one segment (``timestamps``: ``SegmentTiming`` and the
timed engine call that reports them) and the character tracks built from them, in
ElevenLabs' shapes (``timeline``): ``AlignmentTimeline`` for a whole utterance and
``AlignmentChunk`` for a piece of audio, the one alignment type live speech hands around
(from the timeline, or ``estimate_alignment`` where the engine reports no timings);
``websocket_alignment`` is the one conversion to the WebSockets' JSON, framed per message
by ``MessageClock``. A dialogue's ``voice_segments`` (which turn's voice is heard when) are read
off those tracks.

May import: inference, text and audio. Never another room of synthesis.
"""
