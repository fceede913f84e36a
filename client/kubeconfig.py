"""Which API server to talk to: a kubeconfig file (or the in-cluster config, or the default
kubeconfig) in, a configured ``kubernetes`` ``ApiClient`` out, and a one-line error naming the
file when it cannot be used. Controllers, the simulated fleet and the CLI all connect this way.
"""

from __future__ import annotations

import os

import kubernetes
import yaml
from kubernetes.client import ApiClient

from ocm_rollout.client.kube import load_api_client


class KubeconfigError(ValueError):
    """The kubeconfig cannot be read or used; the message is one line, naming the file."""


def load_client(kubeconfig: str | None) -> ApiClient:
    """An ApiClient for ``kubeconfig``, or the in-cluster config, or the default kubeconfig."""
    if kubeconfig is not None:
        path = os.path.expanduser(kubeconfig)
        try:
            with open(path, encoding="utf-8") as handle:
                content = yaml.safe_load(handle)
        except OSError as exc:
            raise KubeconfigError(f"cannot read kubeconfig {kubeconfig}: {exc.strerror or exc}") from None
        except yaml.YAMLError as exc:
            raise KubeconfigError(f"kubeconfig {kubeconfig} is not valid YAML: {one_line(exc)}") from None
        if not isinstance(content, dict):
            raise KubeconfigError(f"kubeconfig {kubeconfig} is not a kubeconfig (no mapping at the top)")
        kubeconfig = path
    try:
        return load_api_client(kubeconfig)
    except (kubernetes.config.ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        where = f"kubeconfig {kubeconfig}" if kubeconfig else "the in-cluster config or the default kubeconfig"
        raise KubeconfigError(f"cannot use {where}: {one_line(exc)}") from None


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (its type's name when it has none), for error output."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
