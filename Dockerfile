# lagmon: one image, three roles (collect | dashboard | analyze), chosen by the command;
# and a slim collector-only target without Java, PySpark or Streamlit.
#   docker build -t lagmon .                                    (the full image: the default target)
#   docker build --target collector -t lagmon-collector .       (collect, healthcheck, db, the read commands)
#   docker run -v lagmon-data:/data -e LAGMON_BOOTSTRAP_SERVERS=broker:9092 lagmon collect
# The Python step is docker/install-python.sh, which the tests run in a clean virtual environment.

FROM python:3.11-slim-bookworm AS collector-deps
WORKDIR /src
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY requirements-collector.txt ./
COPY docker/install-python.sh docker/
RUN sh docker/install-python.sh /opt/lagmon requirements-collector.txt

FROM python:3.11-slim-bookworm AS python-deps
WORKDIR /src
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY requirements.txt ./
COPY docker/install-python.sh docker/
RUN sh docker/install-python.sh /opt/lagmon

# The collector alone: Python and requirements-collector.txt; no Java, PySpark, Streamlit or dashboard.
FROM python:3.11-slim-bookworm AS collector
# tini reaps children.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 lagmon \
 && mkdir /data && chown lagmon /data
COPY --from=collector-deps /opt/lagmon /opt/lagmon
WORKDIR /app
COPY alembic.ini pyproject.toml ./
COPY monitor/ monitor/
COPY migrations/ migrations/
COPY docker/ docker/
ENV PATH=/opt/lagmon/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    LAGMON_DATABASE_URL=sqlite:////data/lagmon.db
USER 10001
VOLUME ["/data"]
EXPOSE 9308
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 CMD ["docker/healthcheck.sh"]
ENTRYPOINT ["tini", "--", "docker/entrypoint.sh"]
CMD ["collect"]

# The full image, every role (the default target: the last stage).
FROM python:3.11-slim-bookworm AS full
# Java runs Spark; Debian's SQLite and PostgreSQL JDBC drivers let Spark read the store; tini reaps children.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless libxerial-sqlite-jdbc-java \
    libpostgresql-jdbc-java tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 lagmon \
 && mkdir /data && chown lagmon /data
COPY --from=python-deps /opt/lagmon /opt/lagmon
WORKDIR /app
COPY alembic.ini pyproject.toml app.py ./
COPY monitor/ monitor/
COPY spark/ spark/
COPY app_pages/ app_pages/
COPY migrations/ migrations/
COPY .streamlit/ .streamlit/
COPY docker/ docker/
ENV PATH=/opt/lagmon/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    LAGMON_DATABASE_URL=sqlite:////data/lagmon.db \
    LAGMON_HISTORY_DIR=/data/history
USER 10001
VOLUME ["/data"]
EXPOSE 8501 9308
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 CMD ["docker/healthcheck.sh"]
ENTRYPOINT ["tini", "--", "docker/entrypoint.sh"]
CMD ["collect"]
