# syntax=docker/dockerfile:1
# The ocm-rollout controllers image: `docker build -t ocm-rollout:0.1.0 .`
# Stage 1 builds the project wheel and a virtualenv with the pinned runtime dependencies;
# stage 2 is a slim Python with that virtualenv only: no compiler, no pip, no sources, non-root.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml constraints.txt README.md ./
COPY api ./api
COPY controllers ./controllers
COPY sandbox ./sandbox
COPY client ./client
COPY cli ./cli
RUN python -m pip wheel --no-deps --wheel-dir /wheels . \
 && python -m venv /opt/ocm-rollout \
 && /opt/ocm-rollout/bin/pip install --constraint constraints.txt /wheels/ocm_rollout-*.whl \
 && /opt/ocm-rollout/bin/pip uninstall --yes pip setuptools wheel \
 && python -m compileall -q /opt/ocm-rollout

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="ocm-rollout" \
      org.opencontainers.image.description="Open Cluster Management hub controllers: placement, ManifestWorkReplicaSet, add-ons" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/ocm-rollout/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN groupadd --system --gid 65532 ocm-rollout \
 && useradd --system --uid 65532 --gid 65532 --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin ocm-rollout
COPY --from=build /opt/ocm-rollout /opt/ocm-rollout
USER 65532:65532
# metrics, health probes, placement debug endpoint
EXPOSE 8080 8081 8383
ENTRYPOINT ["ocm-rollout", "run"]
