"""The certificates and keys of a real control plane on one machine (``kube_hub``).

A cluster CA (kube-apiserver's client CA, and the CA kube-controller-manager signs
CertificateSigningRequests with), kube-apiserver's serving certificate for loopback, the
service-account signing key pair (ECDSA P-256, which kube-apiserver accepts for both), and, as
kubeadm sets up every cluster, a front-proxy CA with its ``front-proxy-client`` certificate:
kube-apiserver's request-header authentication (``--requestheader-client-ca-file``, and the
client certificate it proxies aggregated APIs with), which it publishes in the
``kube-system/extension-apiserver-authentication`` ConfigMap that controllers built on the
generic API server library (OCM's among them) read to authenticate calls to their own
endpoints. Kept as files in one folder, so that a control plane started again on the same folder (``up --hub
kube-apiserver --data DIR``) keeps its identity and old kubeconfigs keep working.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ocm_rollout.sandbox.tls import certificate_builder, subject_alt_names

VALID_DAYS = 3650
# The common name of the front proxy's client certificate, kubeadm's (and the one name
# kube-apiserver's --requestheader-allowed-names lets through).
FRONT_PROXY_CLIENT = "front-proxy-client"
SERVING_HOSTS = ("127.0.0.1", "::1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")


@dataclass(frozen=True)
class Pki:
    """The files of one control plane's PKI, in ``directory``."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def sa_key(self) -> Path:
        return self.directory / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.directory / "sa.pub"

    @property
    def front_proxy_ca_cert(self) -> Path:
        return self.directory / "front-proxy-ca.crt"

    @property
    def front_proxy_ca_key(self) -> Path:
        return self.directory / "front-proxy-ca.key"

    @property
    def front_proxy_client_cert(self) -> Path:
        return self.directory / "front-proxy-client.crt"

    @property
    def front_proxy_client_key(self) -> Path:
        return self.directory / "front-proxy-client.key"

    @property
    def tokens(self) -> Path:
        """kube-apiserver's ``--token-auth-file``: ``token,user,uid,"groups"`` per line."""
        return self.directory / "tokens.csv"

    def complete(self) -> bool:
        return all(p.is_file() for p in (self.ca_cert, self.ca_key, self.serving_cert, self.serving_key,
                                         self.sa_key, self.sa_pub, self.tokens))

    def front_proxy_complete(self) -> bool:
        return all(p.is_file() for p in (self.front_proxy_ca_cert, self.front_proxy_ca_key,
                                         self.front_proxy_client_cert, self.front_proxy_client_key))

    def token(self, user: str) -> str:
        """The static token of ``user`` in the token file."""
        for line in self.tokens.read_text(encoding="utf-8").splitlines():
            fields = line.split(",", 3)
            if len(fields) >= 2 and fields[1] == user:
                return fields[0]
        raise KeyError(f"no token for {user!r} in {self.tokens}")


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path: Path, data: bytes, private: bool = False) -> None:
    path.write_bytes(data)
    if private:
        path.chmod(0o600)


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=not cert_sign, data_encipherment=False,
        key_agreement=False, key_cert_sign=cert_sign, crl_sign=cert_sign, encipher_only=False, decipher_only=False,
    )


def ensure(directory: Path, users: dict[str, tuple[str, ...]]) -> Pki:
    """The PKI in ``directory``: made when any file is missing, kept otherwise (the front proxy's
    on its own, so that a folder from before it keeps its cluster CA). ``users`` maps each
    static-token user to its groups; a user missing from an existing token file is added."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    if not pki.complete():
        _make(pki)
    if not pki.front_proxy_complete():
        _make_front_proxy(pki)
    _ensure_tokens(pki, users)
    return pki


def _ca(common_name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        certificate_builder(name, name, key.public_key(), VALID_DAYS)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _make(pki: Pki) -> None:
    ca_key, ca = _ca("ocm-rollout kube-apiserver CA")
    ca_name = ca.subject
    key = ec.generate_private_key(ec.SECP256R1())
    names = subject_alt_names(SERVING_HOSTS)
    serving = (
        certificate_builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]), ca_name, key.public_key(), VALID_DAYS)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    sa_key = ec.generate_private_key(ec.SECP256R1())
    _write(pki.ca_key, _pem_key(ca_key), private=True)
    _write(pki.ca_cert, ca.public_bytes(serialization.Encoding.PEM))
    _write(pki.serving_key, _pem_key(key), private=True)
    _write(pki.serving_cert, serving.public_bytes(serialization.Encoding.PEM))
    _write(pki.sa_key, _pem_key(sa_key), private=True)
    _write(pki.sa_pub, sa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                        serialization.PublicFormat.SubjectPublicKeyInfo))
    _write(pki.tokens, b"", private=True)


def _make_front_proxy(pki: Pki) -> None:
    """kubeadm's ``front-proxy-ca`` and ``front-proxy-client`` (kube-apiserver's
    ``--requestheader-allowed-names``), a client certificate."""
    ca_key, ca = _ca("ocm-rollout front-proxy CA")
    key = ec.generate_private_key(ec.SECP256R1())
    client = (
        certificate_builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, FRONT_PROXY_CLIENT)]), ca.subject, key.public_key(), VALID_DAYS)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write(pki.front_proxy_ca_key, _pem_key(ca_key), private=True)
    _write(pki.front_proxy_ca_cert, ca.public_bytes(serialization.Encoding.PEM))
    _write(pki.front_proxy_client_key, _pem_key(key), private=True)
    _write(pki.front_proxy_client_cert, client.public_bytes(serialization.Encoding.PEM))


def _ensure_tokens(pki: Pki, users: dict[str, tuple[str, ...]]) -> None:
    lines = [line for line in pki.tokens.read_text(encoding="utf-8").splitlines() if line.strip()]
    known = {line.split(",", 3)[1] for line in lines if line.count(",") >= 2}
    for user, groups in users.items():
        if user not in known:
            group_field = f',"{",".join(groups)}"' if groups else ""
            lines.append(f"{secrets.token_urlsafe(32)},{user},{user}{group_field}")
    _write(pki.tokens, ("\n".join(lines) + "\n").encode(), private=True)
