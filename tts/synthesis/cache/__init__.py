"""The audio cache: finished audio by everything that determines its bytes (``audio``), and
the alignment kept beside each entry so a cache hit still has timestamps (``alignment``).

May import: alignment, models, infra and audio. Never the stages, runs or live speech.
"""
