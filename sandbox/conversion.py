"""CRD conversion through a conversion webhook, as kube-apiserver performs it.

A CustomResourceDefinition whose ``spec.conversion.strategy`` is ``Webhook`` stores its objects in
the storage version; every read, write, list and watch in another served version sends the
objects to the webhook in a ``ConversionReview`` (``apiextensions.k8s.io/v1``, or ``v1beta1`` when
that is the only version the CRD lists in ``conversionReviewVersions``) and uses what it answers.
What kube-apiserver checks in an answer, the hub checks too: the review's ``uid``, ``Success``, one
converted object per object sent, each in the version asked for and of the same kind, and a
``metadata`` in which only labels and annotations changed (everything else is restored from the
object sent). Anything else fails the request with kube-apiserver's error (500, ``conversion
webhook for <group/version, Kind=kind> failed: ...``), and nothing stored changes.

The engine is synchronous, the webhook is not: the engine asks ``Converter.lookup`` for a
conversion, which answers from what the webhook has already converted, or raises
``MissingConversion`` naming what it needs. The server catches that, calls the webhook
(``Converter.fill``) and runs the operation again; an operation raises before it writes anything,
since every conversion it needs comes before its write. Answers are remembered by content (the
object without the metadata a webhook may not change), so a write's object is converted once.

The webhook is reached at ``clientConfig.url``. A ``clientConfig.service`` is a Service of the
cluster, which the local hub has no network for: a request then fails as kube-apiserver's does
when the Service cannot be reached.
"""

from __future__ import annotations

import base64
import json
import ssl
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import aiohttp

from ocm_rollout.sandbox import errors

# kube-apiserver's fixed timeout for CRD conversion webhooks.
TIMEOUT_SECONDS = 30.0
# How many conversions are remembered (each an object in one version).
CACHE_SIZE = 20_000
REVIEW_VERSIONS = ("v1", "v1beta1")
_CHANGEABLE_META = ("labels", "annotations")


@dataclass(frozen=True)
class WebhookConfig:
    """``spec.conversion.webhook`` of a CRD."""

    url: str | None
    service: dict[str, Any] | None
    ca_bundle: bytes | None
    review_version: str

    @classmethod
    def from_crd(cls, spec: dict[str, Any]) -> WebhookConfig | None:
        conversion = spec.get("conversion") or {}
        if conversion.get("strategy") != "Webhook":
            return None
        webhook = conversion.get("webhook") or {}
        client = webhook.get("clientConfig") or {}
        listed = [v for v in webhook.get("conversionReviewVersions") or [] if v in REVIEW_VERSIONS]
        bundle = client.get("caBundle")
        return cls(
            url=client.get("url"),
            service=client.get("service"),
            ca_bundle=base64.b64decode(bundle) if bundle else None,
            review_version=listed[0] if listed else "v1",
        )

    def endpoint(self) -> str:
        if self.url:
            return self.url
        service = self.service or {}
        path = service.get("path") or ""
        port = service.get("port") or 443
        return f"https://{service.get('name')}.{service.get('namespace')}.svc:{port}{path}"


class MissingConversion(Exception):
    """The engine needs ``objects`` in ``api_version`` and the webhook has not converted them yet."""

    def __init__(self, objects: list[dict[str, Any]], api_version: str) -> None:
        super().__init__(f"{len(objects)} object(s) to convert to {api_version}")
        self.objects = objects
        self.api_version = api_version


def content_key(obj: dict[str, Any], api_version: str) -> str:
    """What a conversion depends on: the object without the metadata a webhook may not change."""
    meta = obj.get("metadata") or {}
    kept = {k: meta[k] for k in _CHANGEABLE_META if k in meta}
    rest = {k: v for k, v in obj.items() if k != "metadata"}
    return api_version + "\n" + json.dumps([rest, kept], sort_keys=True, separators=(",", ":"))


def _restore_meta(sent: dict[str, Any], converted: dict[str, Any]) -> dict[str, Any]:
    """The converted object with the metadata sent, but for its labels and annotations."""
    out = dict(converted)
    meta = {k: v for k, v in (sent.get("metadata") or {}).items() if k not in _CHANGEABLE_META}
    for k in _CHANGEABLE_META:
        if k in (converted.get("metadata") or {}):
            meta[k] = converted["metadata"][k]
    out["metadata"] = meta
    return out


def _gvk(obj: dict[str, Any]) -> str:
    return f"{obj.get('apiVersion')}, Kind={obj.get('kind')}"


class Converter:
    """Calls conversion webhooks and remembers their answers."""

    def __init__(self, *, cache_size: int = CACHE_SIZE, timeout: float = TIMEOUT_SECONDS) -> None:
        self._cache: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._cache_size = cache_size
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[bytes | None, ssl.SSLContext] = {}
        self.calls = 0

    # -- the engine's side ---------------------------------------------------------------------
    def lookup(self, obj: dict[str, Any], api_version: str) -> dict[str, Any]:
        """``obj`` in ``api_version``, as the webhook converted it; raises ``MissingConversion``."""
        key = content_key(obj, api_version)
        found = self._cache.get(key)
        if found is None:
            raise MissingConversion([obj], api_version)
        self._cache.move_to_end(key)
        return _restore_meta(obj, found)

    # -- the server's side ---------------------------------------------------------------------
    async def fill(self, config: WebhookConfig, objects: list[dict[str, Any]], api_version: str) -> None:
        """Have the webhook convert whichever of ``objects`` it has not converted yet."""
        await self.convert(config, objects, api_version)

    async def convert(
        self, config: WebhookConfig, objects: list[dict[str, Any]], api_version: str
    ) -> list[dict[str, Any]]:
        """``objects`` in ``api_version``: remembered answers, and one review for the rest."""
        out: list[dict[str, Any] | None] = []
        missing: list[int] = []
        for i, obj in enumerate(objects):
            if obj.get("apiVersion") == api_version:
                out.append(obj)
                continue
            found = self._cache.get(content_key(obj, api_version))
            if found is None:
                missing.append(i)
                out.append(None)
            else:
                out.append(_restore_meta(obj, found))
        if missing:
            sent = [objects[i] for i in missing]
            converted = await self._review(config, sent, api_version)
            for i, obj, answer in zip(missing, sent, converted, strict=True):
                self._remember(content_key(obj, api_version), answer)
                out[i] = _restore_meta(obj, answer)
        return [o for o in out if o is not None]

    def _remember(self, key: str, answer: dict[str, Any]) -> None:
        self._cache[key] = answer
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    async def _review(
        self, config: WebhookConfig, objects: list[dict[str, Any]], api_version: str
    ) -> list[dict[str, Any]]:
        gvk = _gvk(objects[0])
        failed = f"conversion webhook for {gvk} failed"
        uid = str(uuid.uuid4())
        review = {
            "apiVersion": f"apiextensions.k8s.io/{config.review_version}",
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": objects},
        }
        url = config.endpoint()
        if config.url is None:
            raise errors.internal(f'{failed}: Post "{url}?timeout=30s": service "{(config.service or {}).get("name")}" not found')
        self.calls += 1
        try:
            session = await self._client()
            async with session.post(
                f"{url}?timeout={int(self._timeout)}s",
                json=review,
                ssl=self._ssl(config.ca_bundle),
                timeout=aiohttp.ClientTimeout(total=self._timeout),
            ) as resp:
                if resp.status != 200:
                    text = (await resp.text())[:300]
                    raise errors.internal(f"{failed}: the server responded with the status code {resp.status}: {text}")
                answer = await resp.json(content_type=None)
        except errors.ApiError:
            raise
        except TimeoutError:
            raise errors.internal(f'{failed}: Post "{url}?timeout=30s": context deadline exceeded') from None
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise errors.internal(f'{failed}: Post "{url}?timeout=30s": {exc}') from None
        return _checked(answer, uid, objects, api_version, failed)

    async def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        return self._session

    def _ssl(self, ca_bundle: bytes | None) -> ssl.SSLContext:
        context = self._contexts.get(ca_bundle)
        if context is None:
            context = ssl.create_default_context(cadata=ca_bundle.decode() if ca_bundle else None)
            self._contexts[ca_bundle] = context
        return context

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _checked(
    answer: Any, uid: str, sent: list[dict[str, Any]], api_version: str, failed: str
) -> list[dict[str, Any]]:
    """The converted objects of a ConversionReview answer, checked as kube-apiserver checks them."""
    response = answer.get("response") if isinstance(answer, dict) else None
    if not isinstance(response, dict):
        raise errors.internal(f"{failed}: no response provided")
    if response.get("uid") != uid:
        raise errors.internal(f"{failed}: expected response uid {uid!r}, got {response.get('uid')!r}")
    result = response.get("result") or {}
    if result.get("status") != "Success":
        raise errors.internal(f"{failed}: {result.get('message') or 'unknown error'}")
    converted = response.get("convertedObjects")
    if not isinstance(converted, list) or len(converted) != len(sent):
        count = len(converted) if isinstance(converted, list) else 0
        raise errors.internal(f"{failed}: returned {count} objects, expected {len(sent)}")
    out: list[dict[str, Any]] = []
    for i, (obj, got) in enumerate(zip(sent, converted, strict=True)):
        where = f"invalid converted object at index {i}"
        if not isinstance(got, dict):
            raise errors.internal(f"{failed}: {where}: not an object")
        if got.get("apiVersion") != api_version:
            raise errors.internal(f"{failed}: {where}: invalid apiVersion {got.get('apiVersion')!r}, expected {api_version!r}")
        if got.get("kind") != obj.get("kind"):
            raise errors.internal(f"{failed}: {where}: invalid kind {got.get('kind')!r}, expected {obj.get('kind')!r}")
        meta = got.get("metadata") or {}
        sent_meta = obj.get("metadata") or {}
        for field in ("name", "namespace", "uid"):
            if meta.get(field, sent_meta.get(field)) != sent_meta.get(field):
                raise errors.internal(f"{failed}: invalid metadata of the converted object at index {i}: must not change metadata.{field}")
        out.append(got)
    return out
