"""The inference service: engines and their registry; knows nothing of HTTP or Django views."""
