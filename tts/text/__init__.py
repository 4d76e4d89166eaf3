"""The text front end: request text (plain or SSML) to the segments a voice speaks.

``prepare.prepare_text`` is the entry point; ``language`` checks that a voice
can speak the text. See docs/text.md.
"""
