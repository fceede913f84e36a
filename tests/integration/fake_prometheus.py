"""A stand-in for a Prometheus HTTP API in integration tests: ``/api/v1/query`` answers with the
value set for the cluster the query names (``cluster="<name>"``), or with what the test asks for
(a PromQL error, garbage). Every query is recorded. The end-to-end tests use a real Prometheus."""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

_CLUSTER = re.compile(r'cluster="((?:[^"\\]|\\.)*)"')


class FakePrometheus:
    def __init__(self) -> None:
        self.values: dict[str, float] = {}
        self.default: float | None = 0.0
        # "error": answer {"status": "error", ...} (a PromQL error); "garbage": a body that is not JSON.
        self.mode = "values"
        # Seconds every answer waits first (a hung Prometheus: longer than the check's timeout).
        self.delay = 0.0
        self.queries: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                query = (parse_qs(url.query).get("query") or [""])[0]
                fake.queries.append(query)
                if fake.delay:
                    time.sleep(fake.delay)
                status, body = fake.answer(url.path, query)
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if fake.mode != "garbage" else "text/html")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="fake-prometheus", daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, path: str, query: str) -> tuple[int, bytes]:
        if path != "/api/v1/query":
            return 404, b"not found"
        if self.mode == "garbage":
            return 200, b"<html>this is not Prometheus</html>"
        if self.mode == "error":
            doc = {"status": "error", "errorType": "bad_data", "error": "1:8: parse error: unexpected right parenthesis ')'"}
            return 400, json.dumps(doc).encode()
        match = _CLUSTER.search(query)
        cluster = match.group(1) if match else ""
        value = self.values.get(cluster, self.default)
        result = [] if value is None else [{"metric": {"cluster": cluster}, "value": [0, str(value)]}]
        return 200, json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()

    def queried(self, cluster: str) -> int:
        return sum(1 for q in self.queries if f'cluster="{cluster}"' in q)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakePrometheus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
