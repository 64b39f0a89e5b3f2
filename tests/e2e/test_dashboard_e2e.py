"""The dashboard in real headless Chromium against a real cluster, workload and collector.

A churning and a lagging group run on the session's Kafka while the collector
samples every second into a fresh database; once the churn group has
rebalanced twice, the collector and workload stop (so numbers hold still), and
`streamlit run app.py` serves that database. Then, as a user would: the
overview lists both groups with the lag `python -m monitor lag` reports,
choosing a group opens its page, the rebalances page shows the churn group's
rebalances as the CLI counts them, and an alert-style link opens the right
group and range. Screenshots go to tests/_screens/ (git-ignored).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
from harness import CHROMIUM, CHROMIUM_ARGS, cli_json, http_ok, running, stop_process, wait_for

from monitor.demo import free_port
from monitor.store import make_engine, read_groups, read_rebalances
from monitor.store.lag_seconds import read_lag_seconds

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
SCREENS = ROOT / "tests" / "_screens"


def total_lag(partitions: list[dict]) -> int | None:
    """A group's total lag as `lag --json` gives it: None when no partition's lag is known
    (a churning group stopped mid-rebalance may have none), as the Overview leaves it blank."""
    known = [r["LAG"] for r in partitions if r["LAG"] is not None]
    return sum(known) if known else None


def metric(page, label: str) -> str:
    box = page.locator("[data-testid=stMetric]").filter(has=page.get_by_text(label, exact=True)).first
    return box.locator("[data-testid=stMetricValue]").inner_text().strip()


def grid_rows(page, columns: int) -> list[list[str]]:
    """The first dataframe's visible cells (its accessible table), as rows of `columns` cells."""
    cells = page.locator("[data-testid=stDataFrame]").first.locator("tr")
    return [row.locator("td").all_inner_texts()[:columns] for row in cells.all() if row.locator("td").count()]


def test_dashboard_in_a_real_browser(kafka, unique, tmp_path):
    from playwright.sync_api import sync_playwright

    SCREENS.mkdir(exist_ok=True)
    db = f"sqlite:///{tmp_path / 'e2e.db'}"
    env = {
        **os.environ,
        "LAGMON_DATABASE_URL": db,
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_CLUSTER_NAME": "e2e",
        "LAGMON_GROUP_ALLOW": f"^sim-[a-z]+-{unique}-",
        "LAGMON_DASHBOARD_REFRESH": "30s",
    }
    churn, lagging = f"sim-churn-{unique}-group", f"sim-lagging-{unique}-group"
    py = [sys.executable, "-m", "monitor"]

    with (
        running(
            [*py, "sim", "churn", "--bootstrap", kafka.bootstrap, "--suffix", unique, "--duration", "60"],
            env,
            tmp_path / "churn.log",
        ) as sim_churn,
        running(
            [*py, "sim", "lagging", "--bootstrap", kafka.bootstrap, "--suffix", unique, "--duration", "60"],
            env,
            tmp_path / "lagging.log",
        ) as sim_lagging,
        running([*py, "collect", "--interval", "1s"], env, tmp_path / "collect.log") as collector,
    ):
        engine = make_engine(db)

        def ready():
            if not Path(db.removeprefix("sqlite:///")).exists():
                return False
            try:
                groups = {g.group_id: g for g in read_groups(engine, "e2e")}
                rebalanced = [r for r in read_rebalances(engine, "e2e", churn) if r.rebalance.ended_at]
            except Exception:  # tables not created yet
                return False
            return (
                lagging in groups
                and (groups[lagging].total_lag or 0) > 0
                and churn in groups
                and len(rebalanced) >= 2  # the group forming, then a member cycling out or in
                # lag seconds need a log end stored before the commit (on the first sample, none is)
                and any(v is not None for v in read_lag_seconds(engine, "e2e", lagging).values())
            )

        wait_for(ready, 60, f"the collector to see {churn} rebalance and {lagging} lag (logs in {tmp_path})")
        stop_process(collector)  # numbers hold still from here on
        for proc in (sim_churn, sim_lagging):
            proc.send_signal(signal.SIGINT)  # both stop at once; the context exits wait for them
        engine.dispose()

    cli_lag = {g: total_lag(cli_json("lag", g, env=env)) for g in (churn, lagging)}
    cli_rebalances = len(cli_json("rebalances", "--group", churn, env=env))
    assert cli_lag[lagging] > 0 and cli_rebalances >= 2

    port = free_port(0)
    with running(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless", "true"],
        env,
        tmp_path / "streamlit.log",
        stop=signal.SIGTERM,
    ):
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: http_ok(f"{base}/_stcore/health"), 30, "streamlit to answer")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                # The table's own CSV download asks the File System Access API for a file first; a browser
                # without a picker to show makes Streamlit fall back to an ordinary download, as here.
                page.add_init_script("window.showSaveFilePicker = () => Promise.reject(new Error('no picker'))")

                # Overview: both groups, with the lag the CLI reports.
                page.goto(f"{base}/?range=15m")
                page.wait_for_selector("[data-testid=stDataFrame] td", timeout=30_000, state="attached")
                ordered = grid_rows(page, 7)  # group, state, status, worst partition, type, members, total lag
                rows = {r[0]: r for r in ordered}
                assert set(rows) == {churn, lagging}
                for group in (churn, lagging):
                    shown = rows[group][6].replace(",", "")
                    assert (int(shown) if shown not in ("", "None") else None) == cli_lag[group]
                    assert rows[group][2] in ("OK", "WARN", "ERR")  # the collector's evaluator judged it
                assert metric(page, "Groups") == "2"
                page.screenshot(path=str(SCREENS / "overview.png"))
                assert page.locator("[data-testid=stDownloadButton]").count() == 0  # the toolbar's is the one
                page.locator("[data-testid=stDataFrame]").first.hover()
                with page.expect_download() as download:
                    page.locator(
                        "[data-testid=stElementToolbarButton] button[aria-label^='Download as CSV']"
                    ).first.click()
                csv_rows = Path(download.value.path()).read_text(encoding="utf-8-sig").splitlines()  # after its BOM
                assert csv_rows[0].startswith("group,state,status,worst partition,type,members,total lag,")
                assert sorted(line.split(",")[0] for line in csv_rows[1:]) == sorted([churn, lagging])

                # Choosing a group opens its page.
                page.get_by_label("Open a group").click()
                page.get_by_role("option", name=lagging, exact=True).click()
                page.get_by_text("Open group page").click()
                page.wait_for_url(f"**/group?*group={lagging}*", timeout=30_000)
                page.wait_for_selector("[data-testid=stMetricValue]", timeout=30_000)
                assert metric(page, "Total lag") == f"{cli_lag[lagging]:,}"
                # Lag seconds per partition as `python -m monitor status` computes them from the same store.
                cli_status = cli_json("status", lagging, env=env)
                expected = sorted(
                    (p["topic"], str(p["partition"]), p["lag_seconds"] or "—") for p in cli_status["partitions"]
                )
                # the table renders after the metrics: wait for its rows, as a user waits for them to show
                table = wait_for(
                    lambda: (rows := grid_rows(page, 7)) and len(rows) == len(expected) and rows,
                    30,
                    f"the group page's table of {len(expected)} partitions",
                )
                shown = sorted((r[0], r[1], r[5]) for r in table)  # topic, partition, .., lag seconds
                assert shown == expected and any(s != "—" for _, _, s in shown)
                page.wait_for_selector("[data-testid=stVegaLiteChart]", timeout=30_000)
                page.screenshot(path=str(SCREENS / "group.png"), full_page=True)

                # So does clicking its row in the overview table (the grid is a canvas: click the row's
                # selection cell, 35 px rows under a 35 px header).
                page.goto(f"{base}/?range=15m")
                page.wait_for_selector("[data-testid=stDataFrame] td", timeout=30_000, state="attached")
                time.sleep(1)
                grid = page.locator("[data-testid=stDataFrame]").first.bounding_box()
                index = [r[0] for r in ordered].index(churn)
                page.mouse.click(grid["x"] + 15, grid["y"] + 35 + 35 * index + 17)
                page.wait_for_url(f"**/group?*group={churn}*", timeout=30_000)

                # The rebalances page shows the churn group's rebalances.
                page.goto(f"{base}/rebalances?group={churn}&range=15m")
                page.wait_for_selector("[data-testid=stMetricValue]", timeout=30_000)
                assert metric(page, "Rebalances") == str(cli_rebalances)
                page.wait_for_selector("[data-testid=stVegaLiteChart]", timeout=30_000)
                time.sleep(1)
                page.screenshot(path=str(SCREENS / "rebalances.png"), full_page=True)

                # The alerts page shows what the collector's alert engine stored, as the CLI lists it.
                cli_alerts = cli_json("alerts", "--since=-15m", env=env)
                page.goto(f"{base}/alerts?range=15m")
                page.wait_for_selector("[data-testid=stMetricValue]", timeout=30_000)
                assert metric(page, "Firing") == str(sum(a["state"] == "firing" for a in cli_alerts))
                page.screenshot(path=str(SCREENS / "alerts.png"), full_page=True)

                # An alert-style link opens the right group and range.
                page.goto(f"{base}/?page=group&group={churn}&range=6h")
                page.wait_for_url(f"**/group?*group={churn}*", timeout=30_000)
                page.wait_for_selector("[data-testid=stMetricValue]", timeout=30_000)
                # (a churning group stopped mid-rebalance may have no known lag: seen on a loaded machine)
                assert metric(page, "Total lag") == ("—" if cli_lag[churn] is None else f"{cli_lag[churn]:,}")
                assert "range=6h" in page.url
                selected = page.locator("[data-testid=stSidebar] button[role=radio][aria-checked=true]")
                assert selected.inner_text().strip() == "6h"
            finally:
                browser.close()
