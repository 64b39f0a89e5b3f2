"""Helpers every CLI command shares: the store to read, the cluster to show, where Kafka is."""

from __future__ import annotations

from pathlib import Path

from monitor import devcluster
from monitor.lag import TimeLag
from monitor.models import ConfigError, LagmonError


def open_store(url: str):
    """The database at `url` for reading, migrated to head; a clear error if there is none yet."""
    from monitor.store import make_engine, upgrade  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        raise ConfigError(
            f"no database at {url.removeprefix('sqlite:///')}: "
            f"run `python -m monitor collect` first (or set LAGMON_DATABASE_URL)"
        )
    engine = make_engine(url)
    upgrade(engine)
    return engine


def pick_cluster(engine, requested: str | None, configured: str | None) -> str:
    """--cluster (`requested`), else LAGMON_CLUSTER_NAME (`configured`), else the only cluster in the database."""
    from monitor.store import read_clusters  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    known = [c.cluster for c in read_clusters(engine)]
    wanted = requested or configured
    if wanted:
        if wanted not in known:
            raise ConfigError(f"cluster {wanted!r} is not in the database (known: {', '.join(known) or 'none'})")
        return wanted
    if len(known) == 1:
        return known[0]
    raise ConfigError(
        f"the database holds {len(known)} clusters: pick one with --cluster "
        f"({', '.join(known) or 'none yet: run collect first'})"
    )


def lag_seconds_columns(lag: TimeLag | None) -> dict:
    """A partition's lag in seconds as shown (`34.4s ±0.6`, `≥ 300s`), and for scripts how it was obtained
    and the most it can be off (None for a lower bound)."""
    if lag is None:
        return {"LAG-SECONDS": None, "LAG-SECONDS-METHOD": None, "LAG-SECONDS-ERROR": None}
    error = None if lag.at_least else round(lag.error, 3)
    return {"LAG-SECONDS": str(lag), "LAG-SECONDS-METHOD": lag.method, "LAG-SECONDS-ERROR": error}


SCRIPT_ONLY = ("LAG-SECONDS-METHOD", "LAG-SECONDS-ERROR")  # in --json; a table shows them in LAG-SECONDS


def table_columns(row: dict) -> dict:
    """A row as a table shows it: without the columns only scripts read."""
    return {k: v for k, v in row.items() if k not in SCRIPT_ONLY}


def bootstrap_for(kafka) -> dict[str, str]:
    """The client config of the Kafka settings; without a bootstrap setting, the local dev cluster if one runs."""

    conf = kafka.librdkafka_config()
    if "bootstrap.servers" not in conf:
        try:
            cluster = devcluster.load(devcluster.DEFAULT_DIR)
        except LagmonError:
            cluster = None
        if cluster is None or not any(devcluster.is_running(n.pid) for n in cluster.nodes):
            raise ConfigError(
                "no Kafka to watch: set LAGMON_BOOTSTRAP_SERVERS (or bootstrap.servers in "
                "LAGMON_KAFKA_CONFIG), or start the local one: python -m monitor devcluster start"
            )
        conf["bootstrap.servers"] = cluster.bootstrap
    return conf
