# PostgreSQL from Debian's packages, for hosts without a registry (docker-compose.yml
# uses postgres:16 unless POSTGRES_IMAGE names another). It understands the environment
# that compose gives the official image: POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB,
# data in /var/lib/postgresql/data, pg_isready on PATH.
#
#   docker build -t grader-postgres:bookworm --build-arg BASE_IMAGE=grader-base:bookworm \
#                -f deploy/images/postgres.Dockerfile deploy/images
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN set -eux; \
    mkdir -p /etc/postgresql-common/createcluster.d; \
    echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/no-main.conf; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql; \
    rm -rf /var/lib/apt/lists/*; \
    ln -s "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)" /usr/local/lib/postgresql-bin; \
    install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/data; \
    install -d -o postgres -g postgres -m 0775 /var/run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
ENV PATH=/usr/local/lib/postgresql-bin:$PATH \
    PGDATA=/var/lib/postgresql/data \
    LANG=C.UTF-8
USER postgres
VOLUME /var/lib/postgresql/data
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["postgres-entrypoint"]
CMD ["postgres"]
