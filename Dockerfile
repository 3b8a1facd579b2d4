# crd-scheduler's image, for users with a registry and a daemon:
#   docker build -t crd-scheduler:0.2.0 --build-arg VERSION=0.2.0 \
#     --build-arg REVISION=$(git rev-parse HEAD) --build-arg CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
# The same runtime as `make image` (hack/image/build.py: debootstrap and umoci, no registry or
# daemon): Debian bookworm's Python 3.11, the venv /opt/crd-scheduler from the lock
# (requirements/runtime.txt, hashes required) and the project's wheel (--no-deps), made by the same
# hack/image/rootfs.py; only python3's Debian packages, user 65532, read-only root filesystem.
# tests/unit/test_image_recipe.py checks that this file and hack/image/ agree.
FROM debian:bookworm-slim AS build
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv ca-certificates binutils \
    && rm -rf /var/lib/apt/lists/*
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# Only what the wheel and the image need (see .dockerignore).
WORKDIR /src
COPY pyproject.toml README.md ./
COPY scheduler_core ./scheduler_core
COPY scheduler_operator ./scheduler_operator
COPY requirements/runtime.txt ./requirements/runtime.txt
COPY hack/image/rootfs.py ./hack/image/rootfs.py
# The wheel (pip's isolated build), then the venv from the lock and the image's files in /image.
RUN python3 -m venv /wheel-build \
    && /wheel-build/bin/pip wheel --quiet --no-deps --wheel-dir /dist . \
    && python3 hack/image/rootfs.py --lock requirements/runtime.txt --wheel /dist/crd_scheduler-*.whl --out /image

FROM scratch
ARG VERSION=0.2.0
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=
COPY --from=build /image /
ENV PATH=/opt/crd-scheduler/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
LABEL org.opencontainers.image.title="crd-scheduler" \
      org.opencontainers.image.description="A Kubernetes scheduler in Python: the scheduling framework as a Kopf operator with profiles as custom resources." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      io.crd-scheduler.kubernetes-version="v1.36.3"
# The numeric user of the Deployment's securityContext (runAsUser: 65532), so that
# runAsNonRoot can be checked; it owns nothing in the image. /tmp is the Deployment's emptyDir.
USER 65532:65532
WORKDIR /tmp
EXPOSE 10259
ENTRYPOINT ["crd-scheduler"]
CMD ["run"]
