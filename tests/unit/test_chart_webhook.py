"""The chart's conversion webhook: who serves it, its Service, its certificate (generated or
cert-manager's) and the add-on CRDs that call it."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from tests.unit.test_chart import NON_DEFAULT, assert_valid, of_kind, render

ADDON_CRDS = {
    "clustermanagementaddons.addon.open-cluster-management.io",
    "managedclusteraddons.addon.open-cluster-management.io",
}


def _converted(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in of_kind(objects, "CustomResourceDefinition") if "conversion" in c["spec"]}


def _args(deployment: dict[str, Any]) -> list[str]:
    return list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])


def test_the_addon_crds_call_the_release_webhook_service_and_trust_its_ca(chart: Any) -> None:
    objects = render(chart)
    crds = _converted(objects)
    assert set(crds) == ADDON_CRDS
    secret = next(s for s in of_kind(objects, "Secret") if s["metadata"]["name"] == "ocm-ocm-rollout-webhook-tls")
    for crd in crds.values():
        client = crd["spec"]["conversion"]["webhook"]["clientConfig"]
        assert client["service"] == {"namespace": "ocm-system", "name": "ocm-ocm-rollout-webhook", "path": "/convert", "port": 443}
        assert client["caBundle"] == secret["data"]["ca.crt"]
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    ca = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["ca.crt"]))
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    assert cert.issuer == ca.subject
    public = ca.public_key()
    assert not isinstance(public, ec.EllipticCurvePublicKey)  # Helm's genCA makes RSA keys
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert "ocm-ocm-rollout-webhook.ocm-system.svc" in names


def test_the_webhook_service_selects_the_pods_that_serve_it(chart: Any) -> None:
    for values, component in (({}, "controllers"), (NON_DEFAULT, "addon")):
        objects = render(chart, values)
        service = next(s for s in of_kind(objects, "Service") if s["metadata"]["name"].endswith("-webhook"))
        assert service["spec"]["selector"]["app.kubernetes.io/component"] == component
        assert service["spec"]["ports"][0]["targetPort"] == "webhook"
        serving = [d for d in of_kind(objects, "Deployment") if "--webhook-cert-dir=/var/run/ocm-rollout/webhook" in _args(d)]
        assert [d["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"] for d in serving] == [component]
        pod = serving[0]["spec"]["template"]["spec"]
        assert {"name": "webhook", "containerPort": 9443, "protocol": "TCP"} in pod["containers"][0]["ports"]
        volume = next(v for v in pod["volumes"] if v["name"] == "webhook-certificate")
        assert volume["secret"]["secretName"].endswith("-webhook-tls")


def test_without_the_addon_manager_the_first_component_serves_the_webhook(chart: Any) -> None:
    objects = render(chart, {"deploymentMode": "perController", "controllers": {"addon": {"enabled": False}}})
    serving = [d["metadata"]["name"] for d in of_kind(objects, "Deployment") if "--webhook-bind-address=:9443" in _args(d)]
    assert serving == ["ocm-ocm-rollout-placement"]


@pytest.mark.parametrize("issuer", [{}, {"name": "corp-ca", "kind": "ClusterIssuer"}])
def test_with_cert_manager_the_crds_get_the_ca_injected(chart: Any, issuer: dict[str, str]) -> None:
    objects = render(chart, {"conversionWebhook": {"certManager": {"enabled": True, "issuerRef": issuer}}})
    assert_valid(objects)
    assert not [s for s in of_kind(objects, "Secret") if s["metadata"]["name"].endswith("-webhook-tls")]
    certificate = of_kind(objects, "Certificate")[0]
    assert certificate["spec"]["secretName"] == "ocm-ocm-rollout-webhook-tls"
    assert "ocm-ocm-rollout-webhook.ocm-system.svc" in certificate["spec"]["dnsNames"]
    assert len(of_kind(objects, "Issuer")) == (0 if issuer else 1)
    if issuer:
        assert certificate["spec"]["issuerRef"] == issuer
    for crd in _converted(objects).values():
        assert crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "ocm-system/ocm-ocm-rollout-webhook"
        assert "caBundle" not in crd["spec"]["conversion"]["webhook"]["clientConfig"]
