"""A run's live event stream read as a browser's EventSource reads it, over plain HTTP/1.0 (no
chunking): what the live benchmarks measure the page's side with."""

import asyncio
from collections.abc import AsyncGenerator


async def run_events(port: int, run_id: int, cookie: str) -> AsyncGenerator[tuple[str, str], None]:
    """Each event of the run's stream as it arrives: its kind and its data (JSON text), until the
    server ends the stream or the caller stops reading."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            f"GET /runs/{run_id}/events HTTP/1.0\r\nHost: 127.0.0.1\r\nCookie: sessionid={cookie}\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        await writer.drain()
        kind = ""
        while line := await reader.readline():
            text = line.decode().rstrip("\r\n")
            if text.startswith("event: "):
                kind = text[7:]
            elif text.startswith("data: "):
                yield kind, text[6:]
    finally:
        writer.close()
