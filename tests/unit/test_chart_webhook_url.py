"""``conversionWebhook.url``: the add-on CRDs call the webhook at a URL instead of the Service (an
API server that cannot reach Services, a load balancer, a webhook outside the cluster), and the
certificate names the URL's host. tests/e2e/test_chart_kube.py installs it on kube-apiserver."""

from __future__ import annotations

import base64
import ipaddress
from typing import Any

import helm_python as helm
import pytest
from cryptography import x509

from tests.unit.test_chart import assert_valid, of_kind, render

HOST_ANNOTATION = "ocm-rollout.open-cluster-management.io/webhook-url-host"


def _client_configs(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    crds = [c for c in of_kind(objects, "CustomResourceDefinition") if "conversion" in c["spec"]]
    assert len(crds) == 2
    return [c["spec"]["conversion"]["webhook"]["clientConfig"] for c in crds]


def _secret(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return next(s for s in of_kind(objects, "Secret") if s["metadata"]["name"].endswith("-webhook-tls"))


def _names(secret: dict[str, Any]) -> x509.SubjectAlternativeName:
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value


@pytest.mark.parametrize(
    ("url", "ip", "dns"),
    [
        ("https://127.0.0.1:9443/convert", "127.0.0.1", None),
        ("https://[::1]:9443/convert", "::1", None),
        ("https://hooks.example.com/convert", None, "hooks.example.com"),
    ],
)
def test_the_crds_call_the_url_and_the_certificate_names_its_host(chart: Any, url: str, ip: str | None, dns: str | None) -> None:
    objects = render(chart, {"conversionWebhook": {"url": url}})
    assert_valid(objects)
    secret = _secret(objects)
    for client in _client_configs(objects):
        # service: null, so that a merge into an adopted CRD naming a Service (OCM's) removes it
        assert client == {"url": url, "service": None, "caBundle": secret["data"]["ca.crt"]}
    names = _names(secret)
    if ip is not None:
        assert ipaddress.ip_address(ip) in names.get_values_for_type(x509.IPAddress)
    if dns is not None:
        assert dns in names.get_values_for_type(x509.DNSName)
    assert "ocm-ocm-rollout-webhook.ocm-system.svc" in names.get_values_for_type(x509.DNSName)
    assert secret["metadata"]["annotations"][HOST_ANNOTATION] == (ip or dns)


def test_without_a_url_the_crds_call_the_service_and_the_secret_has_no_host(chart: Any) -> None:
    objects = render(chart)
    for client in _client_configs(objects):
        assert set(client) == {"service", "caBundle"}
    assert "annotations" not in _secret(objects)["metadata"]


def test_with_cert_manager_the_certificate_names_the_url_host(chart: Any) -> None:
    objects = render(chart, {"conversionWebhook": {"url": "https://10.0.0.7:9443/convert", "certManager": {"enabled": True}}})
    certificate = of_kind(objects, "Certificate")[0]
    assert certificate["spec"]["ipAddresses"] == ["10.0.0.7"]
    for client in _client_configs(objects):
        assert client == {"url": "https://10.0.0.7:9443/convert", "service": None}


@pytest.mark.parametrize("url", ["http://127.0.0.1:9443/convert", "https://user@host/convert", "https://host/convert?x=1", "host:9443"])
def test_the_schema_refuses_a_url_kube_apiserver_would_refuse(chart: Any, url: str) -> None:
    with pytest.raises(helm.HelmValuesError, match="/conversionWebhook/url"):
        chart.validate_schema(chart.merge_values({"conversionWebhook": {"url": url}}))
