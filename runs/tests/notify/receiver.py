"""A webhook receiver on loopback for the tests: a real HTTP server in a thread that keeps what it
was sent and answers with the statuses it is given, one a request (then 200)."""

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    received: list[Received] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)


@contextmanager
def webhook_receiver(statuses: tuple[int, ...] = ()) -> Iterator[Receiver]:
    receiver = Receiver("")
    receiver.statuses.extend(statuses)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            receiver.received.append(Received({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(receiver.statuses.pop(0) if receiver.statuses else 200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
