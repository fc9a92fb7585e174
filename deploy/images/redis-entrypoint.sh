#!/bin/sh
# `redis-server [options]` without a config file: listen on every address (the
# container's network is the boundary) with protected mode off, as the official image does.
set -eu
if [ "${1:-}" = redis-server ] && [ "${2:-}" = "${2#/}" ]; then
  shift
  exec redis-server --bind '* -::*' --protected-mode no --dir /data "$@"
fi
exec "$@"
