# The grader's image: the web app, the workers and beat all run from it (see docker-compose.yml).
#
#   docker build -t autograd-grader .                                   # CPU build of torch
#   docker build -t autograd-grader:gpu --build-arg TORCH_INDEX_URL=https://pypi.org/simple .
#                                    # PyPI's Linux torch wheels are CUDA builds (the driver comes
#                                    # from the host, through the NVIDIA container toolkit)
FROM python:3.11-slim

ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu

# bubblewrap is the sandbox every submission runs in. It needs privileges in a
# container: see the comments on the workers in docker-compose.yml.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap \
 && rm -rf /var/lib/apt/lists/*

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# torch first, pinned and from the chosen index, in a layer of its own: left to the
# project's "torch" requirement, pip would fetch a multi-GB CUDA build from PyPI.
RUN pip install --index-url "$TORCH_INDEX_URL" "torch==$TORCH_VERSION"

WORKDIR /app
COPY pyproject.toml README.md ./
COPY grader ./grader
COPY exercises ./exercises
# Editable, so that the package finds the catalogue (./exercises) and its templates,
# static files and translations where they are in the checkout.
RUN pip install -e . \
 && useradd --system --create-home --home-dir /home/grader grader

# The workers run as root: bubblewrap, started by root, drops every submission to an
# unprivileged uid of its own. The web app and beat grade nothing; compose runs them as
# the user "grader".
EXPOSE 8000
CMD ["gunicorn", "--bind", "0.0.0.0:8000", "--workers", "2", "--threads", "4", \
     "--access-logfile", "-", "grader.app:create_app()"]
