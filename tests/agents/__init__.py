"""The voice-agent frameworks' own TTS classes against a real server (issue 44; docs/agents.md)."""
