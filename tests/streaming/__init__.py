"""Streaming: chunked HTTP, SSE and the stream-input WebSocket."""
