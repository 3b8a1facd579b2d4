# crd-scheduler: `docker build -t crd-scheduler:0.1.0 .` (the tag manifests/deployment.yaml runs).
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Only what the package build needs (see .dockerignore); the source folder goes after install.
WORKDIR /src
COPY pyproject.toml README.md ./
COPY scheduler_core ./scheduler_core
COPY scheduler_operator ./scheduler_operator
RUN pip install . \
    && rm -rf /src

# The numeric user of the Deployment's securityContext (runAsUser: 65532), so that
# runAsNonRoot can be checked; it owns nothing in the image.
RUN groupadd --gid 65532 nonroot \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin nonroot
USER 65532:65532
WORKDIR /tmp
# pip compiled the bytecode at install; the root filesystem is read-only at run time.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

EXPOSE 8080
ENTRYPOINT ["crd-scheduler"]
CMD ["run"]
