# Redis from Debian's packages, for hosts without a registry (docker-compose.yml uses
# redis:7 unless REDIS_IMAGE names another): data in /data, redis-cli on PATH, and, as in
# the official image, listening on every address of its (private) network.
#
#   docker build -t grader-redis:bookworm --build-arg BASE_IMAGE=grader-base:bookworm \
#                -f deploy/images/redis.Dockerfile deploy/images
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN set -eux; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server; \
    rm -rf /var/lib/apt/lists/*; \
    install -d -o redis -g redis -m 0750 /data
COPY redis-entrypoint.sh /usr/local/bin/redis-entrypoint
USER redis
WORKDIR /data
VOLUME /data
EXPOSE 6379
ENTRYPOINT ["redis-entrypoint"]
CMD ["redis-server"]
