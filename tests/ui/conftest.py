"""The databases the dashboard tests open: SQLite files the app finds through LAGMON_DATABASE_URL.

`seeded_db` and `analysed_db` are written once per module (seeding takes a
while) and must not be changed by a test; `app_db_url` is a new, empty one per
test. The seed itself is tests/support/dashboard_seed.py.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from dashboard_seed import seed, seed_analysis, seed_health, seed_tail

from monitor.store import Store, make_engine, upgrade
from monitor.store.analysis import read_last_analysis


@pytest.fixture(scope="module")
def seeded_db(tmp_path_factory):
    """The seed written up to now, with health and alerts, set as LAGMON_DATABASE_URL for the module.

    Yields the seed's info plus `alert_ids` (from seed_health) and `url`.
    """
    url = f"sqlite:///{tmp_path_factory.mktemp('ui') / 'ui.db'}"
    engine = make_engine(url)
    upgrade(engine)
    base = seed(Store(engine), int(datetime.now(UTC).timestamp() * 1000))
    info = SimpleNamespace(**vars(base), alert_ids=seed_health(engine, base), url=url)
    engine.dispose()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LAGMON_DATABASE_URL", url)
        yield info


@pytest.fixture(scope="module")
def analysed_db(seeded_db, tmp_path_factory):
    """A copy of `seeded_db` plus one Spark run's results and the offsets-topic tail's position.

    Yields `url` and `last` (the stored run); tests point LAGMON_DATABASE_URL at it themselves.
    """
    path = tmp_path_factory.mktemp("ui-analysed") / "analysed.db"
    path.write_bytes(Path(seeded_db.url.removeprefix("sqlite:///")).read_bytes())
    url = f"sqlite:///{path}"
    engine = make_engine(url)
    seed_analysis(engine, seeded_db)
    seed_tail(engine, seeded_db)
    last = read_last_analysis(engine)
    engine.dispose()
    return SimpleNamespace(url=url, last=last)


@pytest.fixture
def app_db_url(tmp_path, monkeypatch) -> str:
    """The URL of a new SQLite file migrated to the head and set as LAGMON_DATABASE_URL for the test."""
    url = f"sqlite:///{tmp_path / 'app.db'}"
    upgrade(url)
    monkeypatch.setenv("LAGMON_DATABASE_URL", url)
    return url
