"""Management commands of the tts app."""
