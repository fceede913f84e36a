"""CustomResourceDefinitions: validation, turning one into a served ResourceType, and loading them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from ocm_rollout.sandbox.conversion import WebhookConfig
from ocm_rollout.sandbox.errors import cause
from ocm_rollout.sandbox.resources import ResourceType, Version
from ocm_rollout.sandbox.table import crd_columns

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def validate_crd(crd: dict[str, Any]) -> list[dict[str, str]]:
    """StatusCauses for a CRD the hub cannot serve (kube-apiserver's main checks)."""
    causes: list[dict[str, str]] = []
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [cause("FieldValueRequired", "spec", "Required value")]
    group = spec.get("group")
    raw_names = spec.get("names")
    names: dict[str, Any] = raw_names if isinstance(raw_names, dict) else {}
    plural = names.get("plural")
    if not isinstance(group, str) or not group:
        causes.append(cause("FieldValueRequired", "spec.group", "Required value"))
    elif "." not in group:
        causes.append(cause("FieldValueInvalid", "spec.group", f'Invalid value: "{group}": should be a domain with at least one dot'))
    if not isinstance(plural, str) or not plural:
        causes.append(cause("FieldValueRequired", "spec.names.plural", "Required value"))
    elif not DNS_LABEL.match(plural):
        causes.append(cause("FieldValueInvalid", "spec.names.plural", f'Invalid value: "{plural}": must be a DNS-1035 label'))
    if not isinstance(names.get("kind"), str) or not names.get("kind"):
        causes.append(cause("FieldValueRequired", "spec.names.kind", "Required value"))
    name = (crd.get("metadata") or {}).get("name")
    if isinstance(group, str) and isinstance(plural, str) and name != f"{plural}.{group}":
        causes.append(
            cause("FieldValueInvalid", "metadata.name", f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group')
        )
    scope = spec.get("scope")
    if scope not in ("Namespaced", "Cluster"):
        causes.append(cause("FieldValueNotSupported", "spec.scope", f'Unsupported value: "{scope}": supported values: "Cluster", "Namespaced"'))
    causes.extend(_conversion_causes(spec.get("conversion")))
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        causes.append(cause("FieldValueRequired", "spec.versions", "Required value"))
        return causes
    storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
    if len(storage) != 1:
        causes.append(cause("FieldValueInvalid", "spec.versions", "Invalid value: must have exactly one version marked as storage version"))
    seen: set[str] = set()
    for i, v in enumerate(versions):
        where = f"spec.versions[{i}]"
        if not isinstance(v, dict):
            causes.append(cause("FieldValueInvalid", where, "Invalid value: must be an object"))
            continue
        vname = v.get("name")
        if not isinstance(vname, str) or not DNS_LABEL.match(vname):
            causes.append(cause("FieldValueInvalid", f"{where}.name", f'Invalid value: "{vname}": must be a DNS-1035 label'))
        elif vname in seen:
            causes.append(cause("FieldValueDuplicate", f"{where}.name", f'Duplicate value: "{vname}"'))
        else:
            seen.add(vname)
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            causes.append(cause("FieldValueRequired", f"{where}.schema.openAPIV3Schema", "Required value: schemas are required"))
            continue
        try:
            Version(str(vname), schema).schema()
        except Exception as exc:  # SchemaError, or jsonschema's several ways of reporting a malformed schema
            causes.append(cause("FieldValueInvalid", f"{where}.schema.openAPIV3Schema", f"Invalid value: {exc}"))
    return causes


def _conversion_causes(conversion: Any) -> list[dict[str, str]]:
    """kube-apiserver's checks of ``spec.conversion``."""
    if conversion is None:
        return []
    if not isinstance(conversion, dict):
        return [cause("FieldValueInvalid", "spec.conversion", "Invalid value: must be an object")]
    strategy = conversion.get("strategy", "None")
    webhook = conversion.get("webhook")
    if strategy not in ("None", "Webhook"):
        return [cause("FieldValueNotSupported", "spec.conversion.strategy",
                      f'Unsupported value: "{strategy}": supported values: "None", "Webhook"')]
    if strategy == "None":
        if webhook is not None:
            return [cause("FieldValueForbidden", "spec.conversion.webhook",
                          "Forbidden: should not be set when strategy is not set to Webhook")]
        return []
    if not isinstance(webhook, dict) or not isinstance(webhook.get("clientConfig"), dict):
        return [cause("FieldValueRequired", "spec.conversion.webhook.clientConfig",
                      "Required value: required when strategy is set to Webhook")]
    causes: list[dict[str, str]] = []
    client = webhook["clientConfig"]
    if bool(client.get("url")) == bool(client.get("service")):
        causes.append(cause("FieldValueRequired", "spec.conversion.webhook.clientConfig",
                            "Required value: exactly one of url or service is required"))
    url = client.get("url")
    if isinstance(url, str) and url and not url.startswith("https://"):
        causes.append(cause("FieldValueInvalid", "spec.conversion.webhook.clientConfig.url",
                            f'Invalid value: "{url}": \'https\' is the only allowed URL scheme'))
    if isinstance(client.get("service"), dict):
        for key in ("namespace", "name"):
            if not client["service"].get(key):
                causes.append(cause("FieldValueRequired", f"spec.conversion.webhook.clientConfig.service.{key}",
                                    "Required value: service " + key + " is required"))
    reviews = webhook.get("conversionReviewVersions")
    if not isinstance(reviews, list) or not reviews:
        causes.append(cause("FieldValueRequired", "spec.conversion.webhook.conversionReviewVersions",
                            "Required value: must include at least one of v1, v1beta1"))
    elif not any(v in ("v1", "v1beta1") for v in reviews):
        causes.append(cause("FieldValueInvalid", "spec.conversion.webhook.conversionReviewVersions",
                            f"Invalid value: {reviews!r}: must include at least one of v1, v1beta1"))
    return causes


def resource_type_for(crd: dict[str, Any]) -> ResourceType:
    spec = crd["spec"]
    names = spec["names"]
    kind = names["kind"]
    versions: dict[str, Version] = {}
    for v in spec["versions"]:
        sub = v.get("subresources") or {}
        versions[v["name"]] = Version(
            name=v["name"],
            schema_source=(v.get("schema") or {}).get("openAPIV3Schema"),
            served=bool(v.get("served", True)),
            storage=bool(v.get("storage", False)),
            status="status" in sub,
            columns=crd_columns(v.get("additionalPrinterColumns")),
            deprecated=bool(v.get("deprecated", False)),
            deprecation_warning=v.get("deprecationWarning"),
        )
    return ResourceType(
        group=spec["group"],
        plural=names["plural"],
        singular=names.get("singular") or kind.lower(),
        kind=kind,
        list_kind=names.get("listKind") or f"{kind}List",
        namespaced=spec.get("scope") == "Namespaced",
        versions=versions,
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        builtin=False,
        has_generation=True,
        webhook=WebhookConfig.from_crd(spec),
    )


def crd_status(crd: dict[str, Any], now: str, previous: dict[str, Any] | None) -> dict[str, Any]:
    """The status kube-apiserver reports for an accepted, established CRD."""
    spec = crd["spec"]
    names = dict(spec["names"])
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", f"{names['kind']}List")
    stored = list(((previous or {}).get("status") or {}).get("storedVersions") or [])
    for v in spec["versions"]:
        if v.get("storage") and v["name"] not in stored:
            stored.append(v["name"])
    old_conditions = {c.get("type"): c for c in ((previous or {}).get("status") or {}).get("conditions") or []}

    def condition(kind: str, reason: str, message: str) -> dict[str, Any]:
        old = old_conditions.get(kind)
        since = old.get("lastTransitionTime") if old and old.get("status") == "True" else now
        return {"type": kind, "status": "True", "lastTransitionTime": since, "reason": reason, "message": message}

    return {
        "acceptedNames": names,
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "storedVersions": stored,
    }


def default_crds() -> list[dict[str, Any]]:
    """Every CRD of the project, from the generator in `ocm_rollout.api.crdgen` (works from an installed package)."""
    from ocm_rollout.api import crdgen  # imported late: the generator imports every model module

    return list(crdgen.generate_crds())


def load_crd_files(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """CRDs from YAML/JSON files or directories of them (other documents are ignored)."""
    found: list[dict[str, Any]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
        elif path.exists():
            files = [path]
        else:
            raise FileNotFoundError(f"--crds: {path} does not exist")
        for file in files:
            with file.open(encoding="utf-8") as fh:
                for doc in yaml.safe_load_all(fh):
                    if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                        found.append(doc)
                    elif isinstance(doc, dict) and doc.get("kind") == "List":
                        found.extend(i for i in doc.get("items", []) if i.get("kind") == "CustomResourceDefinition")
    return found


def with_conversion_webhook(crd: dict[str, Any], client_config: Mapping[str, Any] | None) -> dict[str, Any]:
    """``crd`` calling the conversion webhook at ``client_config`` (``url``/``service`` and
    ``caBundle``), when it is converted by a webhook; otherwise ``crd`` as it is."""
    spec = crd.get("spec") or {}
    conversion = spec.get("conversion") or {}
    if client_config is None or conversion.get("strategy") != "Webhook":
        return crd
    webhook = {**(conversion.get("webhook") or {}), "clientConfig": dict(client_config)}
    return {**crd, "spec": {**spec, "conversion": {**conversion, "webhook": webhook}}}
