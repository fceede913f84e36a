"""OCM's own rules for converting the add-on kinds between v1alpha1 and v1beta1, on JSON dicts.

This module is the lossy half of ``ocm_rollout.api.addon_conversion``: each function here does
exactly what OCM's conversion webhook does (``open-cluster-management.io/api``
``addon/v1beta1/conversion.go`` and the generated field copies beside it, wrapped by
``open-cluster-management.io/ocm`` ``pkg/addon/webhook/v1beta1/*_conversion.go``), and nothing
to make a round trip lossless; that is ``addon_conversion``'s job. Every function takes a dict
it may change in place (the caller's private deep copy) and returns the converted dict.

Where Go would write the zero value of a required field (``name: ""``, ``signerName: ""``) so do
we; otherwise a field absent on one side stays absent on the other.
"""

from __future__ import annotations

from typing import Any, Final

from ocm_rollout.api import constants

V1ALPHA1: Final = f"{constants.ADDON_GROUP}/v1alpha1"
V1BETA1: Final = f"{constants.ADDON_GROUP}/v1beta1"
KUBE_APISERVER_CLIENT_SIGNER: Final = "kubernetes.io/kube-apiserver-client"
REGISTRATION_KUBE_CLIENT: Final = "kubeClient"
REGISTRATION_CUSTOM_SIGNER: Final = "customSigner"
NO_DEFAULT: Final = constants.RESERVED_NO_DEFAULT_CONFIG_NAME
INSTALL_NAMESPACE_ANNOTATION: Final = constants.ANNOTATION_V1ALPHA1_INSTALL_NAMESPACE

Obj = dict[str, Any]


class ConversionError(ValueError):
    """An object that cannot be converted: ``field`` is a JSON path into it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def child(path: str, key: str | int) -> str:
    """The JSON path of ``key`` under ``path``: ``spec.configs``, ``spec.configs[0]``,
    ``metadata.annotations[example.io/key]``."""
    if isinstance(key, int) or "." in key or "/" in key:
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def obj_at(parent: Obj, key: str, path: str) -> Obj | None:
    """``parent[key]`` when it is an object, None when absent or null; anything else is an error."""
    value = parent.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConversionError(child(path, key), "expected an object")
    return value


def list_at(parent: Obj, key: str, path: str) -> list[Obj] | None:
    """``parent[key]`` when it is a list of objects, None when absent or null."""
    value = parent.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        raise ConversionError(child(path, key), "expected a list")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise ConversionError(child(child(path, key), index), "expected an object")
    return value


def text_at(parent: Obj, key: str, path: str) -> str:
    """``parent[key]`` when it is a string, "" when absent or null; anything else is an error."""
    value = parent.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ConversionError(child(path, key), "expected a string")
    return value


def _copy_keys(source: Obj, keys: tuple[str, ...]) -> Obj:
    return {key: source[key] for key in keys if key in source}


def _subject(source: Obj | None, path: str, ous_from: str | None, ous_to: str | None) -> Obj:
    """user and groups, and the organization units renamed from ``ous_from`` to ``ous_to``."""
    if source is None:
        return {}
    out = _copy_keys(source, ("user", "groups"))
    if ous_from is not None and ous_to is not None and ous_from in source:
        out[ous_to] = source[ous_from]
    return out


# --- ClusterManagementAddOn -----------------------------------------------------------------


def cma_to_v1beta1(obj: Obj) -> Obj:
    """spec.supportedConfigs -> spec.defaultConfigs (no default -> the reserved name),
    spec.addOnConfiguration dropped, status.defaultconfigReferences -> defaultConfigReferences."""
    obj["apiVersion"] = V1BETA1
    spec = obj_at(obj, "spec", "")
    if spec is not None:
        spec.pop("addOnConfiguration", None)
        spec.pop("defaultConfigs", None)
        supported = list_at(spec, "supportedConfigs", "spec")
        spec.pop("supportedConfigs", None)
        defaults: list[Obj] = []
        for index, item in enumerate(supported or []):
            path = f"spec.supportedConfigs[{index}]"
            entry = _copy_keys(item, ("group", "resource"))
            default = obj_at(item, "defaultConfig", path)
            if default is None:
                entry["name"] = NO_DEFAULT
            else:
                name = text_at(default, "name", f"{path}.defaultConfig")
                if name == NO_DEFAULT:
                    raise ConversionError(
                        f"{path}.defaultConfig.name",
                        f"{NO_DEFAULT!r} is reserved: v1beta1 would read it as no default config",
                    )
                entry["name"] = name
                namespace = text_at(default, "namespace", f"{path}.defaultConfig")
                if namespace:
                    entry["namespace"] = namespace
            defaults.append(entry)
        if defaults:
            spec["defaultConfigs"] = defaults
    _rename_status(obj, "defaultconfigReferences", "defaultConfigReferences")
    return obj


def cma_to_v1alpha1(obj: Obj) -> Obj:
    """spec.defaultConfigs -> spec.supportedConfigs (the reserved name or an empty one -> no
    defaultConfig), status.defaultConfigReferences -> defaultconfigReferences."""
    obj["apiVersion"] = V1ALPHA1
    spec = obj_at(obj, "spec", "")
    if spec is not None:
        spec.pop("addOnConfiguration", None)
        spec.pop("supportedConfigs", None)
        defaults = list_at(spec, "defaultConfigs", "spec")
        spec.pop("defaultConfigs", None)
        supported: list[Obj] = []
        for index, item in enumerate(defaults or []):
            entry = _copy_keys(item, ("group", "resource"))
            name = text_at(item, "name", f"spec.defaultConfigs[{index}]")
            if name and name != NO_DEFAULT:
                entry["defaultConfig"] = {"name": name}
                namespace = text_at(item, "namespace", f"spec.defaultConfigs[{index}]")
                if namespace:
                    entry["defaultConfig"]["namespace"] = namespace
            supported.append(entry)
        if supported:
            spec["supportedConfigs"] = supported
    _rename_status(obj, "defaultConfigReferences", "defaultconfigReferences")
    return obj


def _rename_status(obj: Obj, old: str, new: str) -> None:
    status = obj_at(obj, "status", "")
    if status is None:
        return
    status.pop(new, None)
    if old in status:
        status[new] = status.pop(old)


# --- ManagedClusterAddOn --------------------------------------------------------------------


def mca_to_v1beta1(obj: Obj) -> Obj:
    """spec.installNamespace -> the v1alpha1-install-namespace annotation; status.kubeClientDriver
    -> the driver of every kubeClient registration; registrations by signer name -> typed;
    status.addOnConfiguration and the configReferences' own name/namespace dropped."""
    obj["apiVersion"] = V1BETA1
    spec = obj_at(obj, "spec", "")
    if spec is not None:
        install_namespace = text_at(spec, "installNamespace", "spec")
        spec.pop("installNamespace", None)
        if install_namespace:
            metadata = obj_at(obj, "metadata", "")
            if metadata is None:
                metadata = obj["metadata"] = {}
            annotations = obj_at(metadata, "annotations", "metadata")
            if annotations is None:
                annotations = metadata["annotations"] = {}
            annotations[INSTALL_NAMESPACE_ANNOTATION] = install_namespace
    status = obj_at(obj, "status", "")
    if status is None:
        return obj
    status.pop("addOnConfiguration", None)
    driver = text_at(status, "kubeClientDriver", "status")
    status.pop("kubeClientDriver", None)
    for reference in list_at(status, "configReferences", "status") or []:
        reference.pop("name", None)
        reference.pop("namespace", None)
    registrations = list_at(status, "registrations", "status")
    if registrations is not None:
        status["registrations"] = [
            _registration_to_v1beta1(item, f"status.registrations[{index}]")
            for index, item in enumerate(registrations)
        ]
        if driver:
            for item in status["registrations"]:
                if item["type"] == REGISTRATION_KUBE_CLIENT:
                    item.setdefault("kubeClient", {})["driver"] = driver
    return obj


def _registration_to_v1beta1(item: Obj, path: str) -> Obj:
    signer = text_at(item, "signerName", path)
    subject = obj_at(item, "subject", path)
    if signer == KUBE_APISERVER_CLIENT_SIGNER:
        kube_client: Obj = {}
        if subject is not None:
            kube_client["subject"] = _subject(subject, path, None, None)
        return {"type": REGISTRATION_KUBE_CLIENT, "kubeClient": kube_client}
    custom: Obj = {"signerName": signer}
    if subject is not None:
        custom["subject"] = _subject(subject, path, "organizationUnit", "organizationUnits")
    return {"type": REGISTRATION_CUSTOM_SIGNER, "customSigner": custom}


def mca_to_v1alpha1(obj: Obj) -> Obj:
    """The reverse of ``mca_to_v1beta1``: the annotation -> spec.installNamespace (and removed),
    the first kubeClient registration's driver -> status.kubeClientDriver, typed registrations ->
    signer names, each configReference's name/namespace <- its desiredConfig."""
    obj["apiVersion"] = V1ALPHA1
    spec = obj_at(obj, "spec", "")
    if spec is not None:
        spec.pop("installNamespace", None)
    metadata = obj_at(obj, "metadata", "")
    annotations = obj_at(metadata, "annotations", "metadata") if metadata is not None else None
    if metadata is not None and annotations is not None and INSTALL_NAMESPACE_ANNOTATION in annotations:
        install_namespace = text_at(annotations, INSTALL_NAMESPACE_ANNOTATION, "metadata.annotations")
        del annotations[INSTALL_NAMESPACE_ANNOTATION]
        if not annotations:
            del metadata["annotations"]
        if install_namespace:
            if spec is None:
                spec = obj["spec"] = {}
            spec["installNamespace"] = install_namespace
    status = obj_at(obj, "status", "")
    if status is None:
        return obj
    status.pop("addOnConfiguration", None)
    status.pop("kubeClientDriver", None)
    for index, reference in enumerate(list_at(status, "configReferences", "status") or []):
        reference.pop("name", None)
        reference.pop("namespace", None)
        path = f"status.configReferences[{index}].desiredConfig"
        desired = obj_at(reference, "desiredConfig", f"status.configReferences[{index}]") or {}
        reference["name"] = text_at(desired, "name", path)
        namespace = text_at(desired, "namespace", path)
        if namespace:
            reference["namespace"] = namespace
    registrations = list_at(status, "registrations", "status")
    if registrations is not None:
        driver = ""
        for index, item in enumerate(registrations):
            kube_client = obj_at(item, "kubeClient", f"status.registrations[{index}]")
            if item.get("type") == REGISTRATION_KUBE_CLIENT and kube_client is not None:
                driver = text_at(kube_client, "driver", f"status.registrations[{index}].kubeClient")
                break
        status["registrations"] = [
            _registration_to_v1alpha1(item, f"status.registrations[{index}]")
            for index, item in enumerate(registrations)
        ]
        if driver:
            status["kubeClientDriver"] = driver
    return obj


def _registration_to_v1alpha1(item: Obj, path: str) -> Obj:
    if item.get("type") == REGISTRATION_KUBE_CLIENT:
        out: Obj = {"signerName": KUBE_APISERVER_CLIENT_SIGNER}
        kube_client = obj_at(item, "kubeClient", path)
        if kube_client is not None:
            subject = obj_at(kube_client, "subject", f"{path}.kubeClient")
            if subject is not None:
                out["subject"] = _subject(subject, path, None, None)
        return out
    out = {"signerName": ""}
    custom = obj_at(item, "customSigner", path)
    if custom is not None:
        out["signerName"] = text_at(custom, "signerName", f"{path}.customSigner")
        subject = obj_at(custom, "subject", f"{path}.customSigner")
        if subject is not None:
            out["subject"] = _subject(subject, path, "organizationUnits", "organizationUnit")
    return out


# --- AddOnDeploymentConfig, AddOnTemplate ---------------------------------------------------


def same_schema_to_v1beta1(obj: Obj) -> Obj:
    """Both versions share one schema (the CRDs differ only in descriptions): only apiVersion."""
    obj["apiVersion"] = V1BETA1
    return obj


def same_schema_to_v1alpha1(obj: Obj) -> Obj:
    """As ``same_schema_to_v1beta1``, the other way."""
    obj["apiVersion"] = V1ALPHA1
    return obj
