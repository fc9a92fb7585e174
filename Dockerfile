# The grader's image: the web app, the workers and beat all run from it (see docker-compose.yml).
#
#   docker build -t autograd-grader .                  # python:3.11-slim, torch's CPU build from PyTorch's index
#   docker build -t autograd-grader:gpu --build-arg TORCH_INDEX_URL=https://pypi.org/simple .
#                                    # PyPI's Linux torch wheels are CUDA builds (the driver comes
#                                    # from the host, through the NVIDIA container toolkit)
#   cp /path/to/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl deploy/wheels/
#   docker build -t autograd-grader --build-arg TORCH_WHEEL=torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl .
#                                    # torch from a wheel file in deploy/wheels/ (git-ignored), no index
#   docker build -t autograd-grader --build-arg BASE_IMAGE=grader-base:bookworm .
#                                    # on a Debian base without a registry: deploy/images/build-base
#
# BASE_IMAGE: any Debian or Ubuntu image with Python 3.11 (the torch wheel's cp311) or one
# where apt-get can install it. Everything Python goes into the virtual environment
# /opt/venv, on PATH, whichever Python the base has (/usr/local/bin/python3 in the official
# image, /usr/bin/python3 in Debian's, where pip may not touch the system's packages).
# CA certificates (*.crt) in deploy/certs/ (git-ignored) are trusted while building and
# running, for networks whose TLS goes through an inspecting proxy.
ARG BASE_IMAGE=python:3.11-slim

FROM ${BASE_IMAGE} AS base
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    PATH=/opt/venv/bin:$PATH
COPY deploy/certs/ /usr/local/share/ca-certificates/
# bubblewrap is the sandbox every submission runs in. It needs privileges in a
# container: see the comments on the workers in docker-compose.yml.
RUN set -eux; \
    packages="bubblewrap ca-certificates"; \
    command -v python3 >/dev/null || packages="$packages python3"; \
    python3 -c 'import ensurepip, venv' 2>/dev/null || packages="$packages python3-venv"; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $packages; \
    rm -rf /var/lib/apt/lists/*; \
    find /usr/local/share/ca-certificates -type f ! -name '*.crt' -delete; \
    update-ca-certificates; \
    python3 -m venv /opt/venv; \
    python -c 'import sys; assert sys.version_info[:2] >= (3, 11), sys.version'

# torch in a stage of its own, pinned: left to the project's "torch" requirement, pip
# would fetch a multi-GB CUDA build from PyPI. A wheel from deploy/wheels/ stays in this
# stage; only the installed packages reach the image.
FROM base AS torch
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG TORCH_WHEEL=
COPY deploy/wheels/ /tmp/wheels/
RUN set -eux; \
    if [ -n "$TORCH_WHEEL" ]; then \
      test -f "/tmp/wheels/$TORCH_WHEEL" || { echo "TORCH_WHEEL: no deploy/wheels/$TORCH_WHEEL in the build context" >&2; exit 1; }; \
      pip install "/tmp/wheels/$TORCH_WHEEL"; \
    else \
      pip install --index-url "$TORCH_INDEX_URL" "torch==$TORCH_VERSION"; \
    fi; \
    python -c 'import torch; print("torch", torch.__version__)'

FROM base
COPY --from=torch /opt/venv /opt/venv
WORKDIR /app
COPY pyproject.toml README.md ./
COPY grader ./grader
COPY exercises ./exercises
COPY client ./client
# Editable, so that the package finds the catalogue (./exercises) and its templates,
# static files and translations where they are in the checkout. torch is already there,
# so its requirement installs nothing more.
RUN pip install -e . \
 && python -c 'import torch, grader.cli' \
 && useradd --system --uid 10001 --user-group --create-home --home-dir /home/grader grader

# The workers run as root: bubblewrap, started by root, drops every submission to an
# unprivileged uid of its own. The web app and beat grade nothing; compose and deploy/k8s
# run them as the user "grader" (uid 10001).
EXPOSE 8000
CMD ["gunicorn", "--bind", "0.0.0.0:8000", "--workers", "2", "--threads", "4", \
     "--access-logfile", "-", "grader.app:create_app()"]
