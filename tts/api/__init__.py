"""The HTTP APIs: ElevenLabs- and OpenAI-compatible views, errors in each dialect."""
