"""The dashboard's login against a real OpenID Connect provider, in real headless Chromium.

The provider is NAV's mock-oauth2-server (a real OIDC server: discovery, authorization code
flow, signed ID tokens, JWKS), fetched from Maven Central by `make setup` (tests/oidc/pom.xml)
and run here on 127.0.0.1 with its interactive login form. `python -m monitor dashboard`
serves a seeded database with a firing alert, its secrets file (`--secrets.files`) pointing
`[auth]` at the provider. Then, as a user would: the Alerts page says to log in and its
controls are disabled; "Log in" goes to the provider, where the user signs in as `alice` with
an email claim; back on the Alerts page the sidebar names her and acknowledging stores her
email as the acknowledgement's author (read back with `python -m monitor alerts --json`);
"Log out" takes the controls away again.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from datetime import UTC, datetime

import pytest
from dashboard_seed import seed, seed_health
from harness import CHROMIUM, CHROMIUM_ARGS, ROOT, cli_json, http_ok, running, wait_for

from monitor.demo import free_port
from monitor.store import Store, make_engine, upgrade

pytestmark = [pytest.mark.e2e]

PROVIDER_LIBS = ROOT / "tests" / "oidc" / "libs"
PROVIDER_MAIN = "no.nav.security.mock.oauth2.StandaloneMockOAuth2ServerKt"
ISSUER = "default"  # mock-oauth2-server serves any issuer id as a path: http://host:port/<issuer>
SCREENS = ROOT / "tests" / "_screens"
EMAIL = "alice@example.com"


@pytest.fixture
def oidc_provider(tmp_path):
    """mock-oauth2-server on 127.0.0.1 with its login form; yields its discovery URL."""
    jars = sorted(PROVIDER_LIBS.glob("*.jar"))
    assert jars, f"no OIDC provider jars in {PROVIDER_LIBS}: run `make setup` (Maven fetches tests/oidc/pom.xml)"
    port = free_port(0)
    env = {
        **os.environ,
        "SERVER_HOSTNAME": "127.0.0.1",
        "SERVER_PORT": str(port),
        "JSON_CONFIG": json.dumps({"interactiveLogin": True, "httpServer": "NettyWrapper"}),
    }
    cmd = ["java", "-Xmx128m", "-cp", os.pathsep.join(map(str, jars)), PROVIDER_MAIN]
    discovery = f"http://127.0.0.1:{port}/{ISSUER}/.well-known/openid-configuration"
    with running(cmd, env, tmp_path / "oidc.log"):
        wait_for(lambda: http_ok(discovery), 60, f"the OIDC provider to answer (log in {tmp_path / 'oidc.log'})")
        yield discovery


def test_logging_in_through_a_real_provider_makes_acks_record_the_user(oidc_provider, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    SCREENS.mkdir(exist_ok=True)
    db = f"sqlite:///{tmp_path / 'login.db'}"
    engine = make_engine(db)
    upgrade(engine)
    info = seed(Store(engine), int(datetime.now(UTC).timestamp() * 1000))
    firing = seed_health(engine, info)["firing"]
    engine.dispose()

    port = free_port(0)
    secrets_file = tmp_path / "secrets.toml"  # what an operator writes (docs/production.md)
    secrets_file.write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_hex(32)}"\n'
        'client_id = "lagmon-dashboard"\n'
        f'client_secret = "{secrets.token_hex(16)}"\n'
        f'server_metadata_url = "{oidc_provider}"\n'
    )
    env = {
        **os.environ,
        "LAGMON_DATABASE_URL": db,
        "LAGMON_DASHBOARD_REFRESH": "60s",
        "LAGMON_DASHBOARD_ANONYMOUS_WRITES": "1",  # must not matter: a login is configured
    }
    dashboard = [sys.executable, "-m", "monitor", "dashboard", "--server.port", str(port)]
    dashboard += ["--server.headless", "true", "--secrets.files", str(secrets_file)]
    with running(dashboard, env, tmp_path / "dashboard.log"):
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: http_ok(f"{base}/_stcore/health"), 30, "the dashboard to answer")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                sidebar = page.locator("[data-testid=stSidebar]")
                acknowledge = page.get_by_role("button", name="Acknowledge", exact=True)

                # Logged out: the page says so and the controls are disabled.
                page.goto(f"{base}/alerts")
                expect(page.get_by_text("Log in (in the sidebar) to acknowledge or silence alerts")).to_be_visible(
                    timeout=30_000
                )
                expect(acknowledge).to_be_disabled()

                # Log in at the provider: its form takes any user name and optional claims.
                sidebar.get_by_role("button", name="Log in").click()
                page.wait_for_url(f"http://127.0.0.1:*/{ISSUER}/authorize?*", timeout=30_000)
                page.locator("input[name=username]").fill("alice")
                claims = {"email": EMAIL, "email_verified": True, "name": "Alice"}
                page.locator("textarea[name=claims]").fill(json.dumps(claims))
                page.get_by_role("button", name="Sign-in").click()
                page.wait_for_url(f"{base}/**", timeout=30_000)
                expect(sidebar.get_by_text(f"Logged in as {EMAIL}")).to_be_visible(timeout=30_000)

                # Acknowledge the firing alert: no name to type, the ack is hers.
                page.goto(f"{base}/alerts")
                expect(page.get_by_text(f"recorded as {EMAIL} (logged in)")).to_be_visible(timeout=30_000)
                expect(page.get_by_label("Acknowledged by")).to_have_count(0)
                expect(acknowledge).to_be_enabled()
                acknowledge.click()
                expect(page.get_by_text(f"Alert #{firing} acknowledged")).to_be_visible(timeout=30_000)
                page.screenshot(path=str(SCREENS / "alerts-logged-in.png"), full_page=True)
                stored = {a["id"]: a for a in cli_json("alerts", "--since=-1d", env=env)}
                assert stored[firing]["acked_by"] == EMAIL

                # Log out (the provider's end-session endpoint, then back): the controls go away again.
                sidebar.get_by_role("button", name="Log out").click()
                expect(sidebar.get_by_role("button", name="Log in")).to_be_visible(timeout=30_000)
                page.goto(f"{base}/alerts")
                expect(page.get_by_role("button", name="Create silence")).to_be_disabled(timeout=30_000)
                expect(sidebar.get_by_text("Logged in as")).to_have_count(0)
            finally:
                browser.close()
