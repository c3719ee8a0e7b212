"""The employee search portal (server-rendered pages; the answer streams in over SSE)."""
