"""Send one scripted request sequence to a hub, normalise the answers, compare two hubs' answers.

- ``Step``: one request (``method``, ``path``, ``query``, ``body``, ``content_type``, ``accept``,
  ``user``), or a watch (``method="WATCH"``: the stream's first ``events`` events). Any field may
  be a function of the answers so far (``Answers``), e.g. a resourceVersion precondition or a
  ``continue`` token read from an earlier answer. ``compare=False`` sends a step without
  comparing its answer (set-up).
- ``Sequence``: a name (unique, also the namespace it runs in: ``{ns}`` in a path or body), an
  area, its steps.
- ``HubClient``: a hub's URL, CA and one bearer token per user, from the hub's handle.
- ``run(sequence, client)``: the sequence's ``Answer`` list on one hub; ``compare(a, b)``: the
  differences between two hubs' answers, as readable lines (empty: the same).

Normalised before comparing: uids, timestamps, resourceVersion values, the random suffix of a
generated name, ``continue`` tokens, and those values inside messages; headers other than
Content-Type, Warning and Retry-After are dropped.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import yaml

JSON = Any
Answers = list["Answer"]
Value = Any  # a value, or a function of the answers so far returning one

ADMIN = "admin"
# Both servers name a write's field manager after the User-Agent's product when none is given.
USER_AGENT = "hub-diff/1.0 (differential suite)"
HEADERS = ("content-type", "warning", "retry-after")
REQUEST_TIMEOUT = 30.0
WATCH_TIMEOUT = 10.0
UNTIL_TIMEOUT = 60.0

UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
OLD_RV = re.compile(r"too old resource version: \d+ \(\d+\)")
RV_IN_MESSAGE = re.compile(r"(resource ?version[^0-9]{0,12})\d+", re.IGNORECASE)


@dataclass
class Step:
    method: str
    path: Value
    body: Value = None
    query: Value = None
    content_type: str = "application/json"
    accept: str = "application/json"
    user: str = ADMIN
    events: int = 0  # a WATCH step: how many events to read
    compare: bool = True
    # Repeat the request until its answer satisfies this (an asynchronous effect: a garbage
    # collector, a finalizer's removal), for at most UNTIL_TIMEOUT seconds; the last answer counts.
    until: Callable[[Answer], bool] | None = None


@dataclass
class Sequence:
    name: str
    area: str
    steps: list[Step]
    # Users other than the admin whose tokens the sequence sends (RBAC).
    users: tuple[str, ...] = ()


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: JSON
    events: list[JSON] = field(default_factory=list)
    compare: bool = True

    def json(self) -> JSON:
        return self.body

    def rv(self) -> str:
        """The answer's resourceVersion (of the object, or of the list)."""
        return str(((self.body or {}).get("metadata") or {}).get("resourceVersion", ""))


def resolve(value: Value, answers: Answers) -> Any:
    return value(answers) if callable(value) else value


def substitute(value: Any, namespace: str) -> Any:
    """``{ns}`` in every string of ``value`` replaced by the sequence's namespace."""
    if isinstance(value, str):
        return value.replace("{ns}", namespace)
    if isinstance(value, list):
        return [substitute(v, namespace) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, namespace) for k, v in value.items()}
    return value


class HubClient:
    """Plain HTTPS requests to a hub, as each user (tokens by user name)."""

    def __init__(self, server: str, ca_pem: bytes, tokens: Mapping[str, str]) -> None:
        parts = urlsplit(server)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 443
        self.tokens = dict(tokens)
        self.context = ssl.create_default_context(cadata=ca_pem.decode())

    @classmethod
    def from_kubeconfig(cls, path: str, tokens: Mapping[str, str] | None = None) -> HubClient:
        config = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        cluster = config["clusters"][0]["cluster"]
        admin = config["users"][0]["user"]["token"]
        return cls(cluster["server"], base64.b64decode(cluster["certificate-authority-data"]),
                   {ADMIN: admin, **(tokens or {})})

    def _connection(self, timeout: float) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)

    def send(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
             content_type: str = "application/json", accept: str = "application/json", user: str = ADMIN) -> Answer:
        target = path + ("?" + urlencode(query) if query else "")
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        headers = {"Authorization": f"Bearer {self.tokens[user]}", "Accept": accept, "User-Agent": USER_AGENT}
        if data is not None:
            headers["Content-Type"] = content_type
        connection = self._connection(REQUEST_TIMEOUT)
        try:
            connection.request(method, target, body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read()
            kept = {k.lower(): v for k, v in response.getheaders() if k.lower() in HEADERS}
            return Answer(response.status, kept, _decode(raw, kept.get("content-type", "")))
        finally:
            connection.close()

    def watch(self, path: str, *, query: Mapping[str, Any] | None, count: int, user: str = ADMIN) -> Answer:
        """The first ``count`` events of a watch (fewer if the stream ends or WATCH_TIMEOUT passes)."""
        params = {"watch": "true", **(query or {})}
        connection = self._connection(WATCH_TIMEOUT)
        events: list[JSON] = []
        try:
            connection.request("GET", path + "?" + urlencode(params),
                               headers={"Authorization": f"Bearer {self.tokens[user]}", "Accept": "application/json",
                                        "User-Agent": USER_AGENT})
            response = connection.getresponse()
            kept = {k.lower(): v for k, v in response.getheaders() if k.lower() in HEADERS}
            if response.status != 200:
                return Answer(response.status, kept, _decode(response.read(), kept.get("content-type", "")))
            deadline = time.monotonic() + WATCH_TIMEOUT
            while len(events) < count and time.monotonic() < deadline:
                try:
                    line = response.readline()
                except TimeoutError:
                    break
                if not line:
                    break
                if line.strip():
                    events.append(json.loads(line))
            return Answer(200, kept, None, events)
        finally:
            connection.close()


def _decode(raw: bytes, content_type: str) -> JSON:
    if not raw:
        return None
    if "json" in content_type:
        try:
            return json.loads(raw)
        except ValueError:
            pass
    return {"raw": raw.decode(errors="replace")}


def run(sequence: Sequence, client: HubClient) -> Answers:
    """Create the sequence's namespace, send its steps, delete the namespace; the answers."""
    ns = sequence.name
    client.send("POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    answers: Answers = []
    for step in sequence.steps:
        path = substitute(resolve(step.path, answers), ns)
        query = substitute(resolve(step.query, answers), ns)
        if step.method == "WATCH":
            answer = client.watch(path, query=query, count=step.events, user=step.user)
        else:
            body = substitute(resolve(step.body, answers), ns)
            deadline = time.monotonic() + UNTIL_TIMEOUT
            while True:
                answer = client.send(step.method, path, query=query, body=body, content_type=step.content_type,
                                     accept=step.accept, user=step.user)
                if step.until is None or step.until(answer) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
        answer.compare = step.compare
        answers.append(answer)
    return answers


# -- normalising -------------------------------------------------------------------------------------


def _text(value: str) -> str:
    value = UID.sub("<uid>", value)
    value = TIME.sub("<time>", value)
    value = OLD_RV.sub("too old resource version: <rv> (<rv>)", value)
    return RV_IN_MESSAGE.sub(r"\1<rv>", value)


def _metadata(meta: dict[str, Any]) -> dict[str, Any]:
    out = dict(meta)
    for key in ("uid", "creationTimestamp", "deletionTimestamp"):
        if key in out:
            out[key] = f"<{key}>"
    if "resourceVersion" in out:
        out["resourceVersion"] = "<rv>"
    if out.get("continue"):
        out["continue"] = "<continue>"
    prefix = out.get("generateName")
    if prefix and str(out.get("name", "")).startswith(prefix):
        out["name"] = f"{prefix}<generated>"
    if "managedFields" in out:
        out["managedFields"] = [{**m, "time": "<time>"} if "time" in m else m for m in out["managedFields"]]
    for ref in out.get("ownerReferences") or []:
        if "uid" in ref:
            ref["uid"] = "<uid>"
    return out


def normalise(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: normalise(v) for k, v in value.items()}
        if isinstance(out.get("metadata"), dict):
            out["metadata"] = _metadata(out["metadata"])
        return out
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, str):
        return _text(value)
    return value


def view(answer: Answer) -> dict[str, Any]:
    """What is compared of an answer."""
    shown: dict[str, Any] = {"status": answer.status, "headers": normalise(answer.headers)}
    if answer.body is not None:
        shown["body"] = normalise(answer.body)
    if answer.events:
        shown["events"] = normalise(answer.events)
    return shown


def compare(local: Answers, kube: Answers) -> list[str]:
    """Lines naming each difference, by step and JSON path (empty: the same answers)."""
    lines: list[str] = []
    for index, (a, b) in enumerate(zip(local, kube, strict=True)):
        if not a.compare:
            continue
        _walk(f"step {index}", view(a), view(b), lines)
    return lines


def _walk(where: str, a: Any, b: Any, lines: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a:
                lines.append(f"{where}.{key}: local has none, kube-apiserver {_short(b[key])}")
            elif key not in b:
                lines.append(f"{where}.{key}: local {_short(a[key])}, kube-apiserver has none")
            else:
                _walk(f"{where}.{key}", a[key], b[key], lines)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _walk(f"{where}[{i}]", x, y, lines)
    elif a != b:
        lines.append(f"{where}: local {_short(a)}, kube-apiserver {_short(b)}")


def _short(value: Any, limit: int = 1200) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."

