"""Who may write from the dashboard, and under which name (docs/production.md, "A login for the dashboard").

The dashboard's only writes are acknowledgements and silences (the Alerts page). With an
identity provider configured in Streamlit's secrets (an `[auth]` section: OIDC through
`st.login`), they are made by the logged-in user and record that user's email (else the
token's subject); nobody logged in, nobody writes. Without a provider they are off, unless
LAGMON_DASHBOARD_ANONYMOUS_WRITES=1 keeps the old way: anyone who reaches the page, under a
typed and unverified name. Read-only pages do not ask.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import streamlit as st

from app_pages import shared
from monitor.config import DashboardSettings
from monitor.models import ConfigError

# What Streamlit's default provider needs (st.login() with no name): `[auth]` in secrets.toml.
AUTH_KEYS = ("redirect_uri", "cookie_secret", "client_id", "client_secret", "server_metadata_url")


class Mode(StrEnum):
    LOGGED_IN = "logged in"  # a provider is configured and the user logged in: writes record them
    LOGGED_OUT = "logged out"  # a provider is configured, nobody logged in: no writes until they do
    MISCONFIGURED = "misconfigured"  # [auth] is there but incomplete: no writes, say what is missing
    ANONYMOUS = "anonymous"  # no provider, LAGMON_DASHBOARD_ANONYMOUS_WRITES=1: anyone, under a typed name
    OFF = "off"  # no provider and no opt-in: no writes


@dataclass(frozen=True)
class Writer:
    """This session's right to write: `name` is the verified identity to record (None: typed, or no writes)."""

    mode: Mode
    name: str | None = None
    problem: str | None = None  # MISCONFIGURED / a bad setting: the one line that says why writes are off

    @property
    def allowed(self) -> bool:
        return self.mode in (Mode.LOGGED_IN, Mode.ANONYMOUS)


def missing_auth_keys(section: Mapping[str, Any]) -> list[str]:
    """The keys of `[auth]` that st.login() needs and `section` lacks (or has empty), in the documented order."""
    return [k for k in AUTH_KEYS if not str(section.get(k) or "").strip()]


def identity(user: Mapping[str, Any]) -> str | None:
    """The name to record for a logged-in user: the email claim if the provider verified it (some let
    users set their own), else the subject (`sub`), else None."""
    claims = ("email", "sub") if user.get("email_verified") is True else ("sub",)
    for claim in claims:
        value = user.get(claim)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def decide(section: Mapping[str, Any] | None, user: Mapping[str, Any], anonymous_writes: bool) -> Writer:
    """Who may write, from the `[auth]` secrets section (None: none), `st.user` and the opt-in setting."""
    if section is not None:
        missing = missing_auth_keys(section)
        if missing:
            return Writer(
                Mode.MISCONFIGURED,
                problem=f"the login is not set up completely: [auth] in secrets.toml lacks {', '.join(missing)}",
            )
        if not user.get("is_logged_in"):
            return Writer(Mode.LOGGED_OUT)
        name = identity(user)
        if name is None:
            return Writer(Mode.MISCONFIGURED, problem="the identity provider's token has neither an email nor a sub")
        return Writer(Mode.LOGGED_IN, name=name)
    return Writer(Mode.ANONYMOUS if anonymous_writes else Mode.OFF)


def auth_section() -> Mapping[str, Any] | None:
    """The `[auth]` section of Streamlit's secrets, or None when there is none (or no secrets file at all)."""
    if not st.secrets.load_if_toml_exists():
        return None
    section = st.secrets.get("auth")
    return section if isinstance(section, Mapping) else None


def configured() -> bool:
    """An identity provider is configured (an `[auth]` section), complete or not."""
    return auth_section() is not None


def writer() -> Writer:
    """This session's Writer. A malformed LAGMON_DASHBOARD_ANONYMOUS_WRITES is writes off, with the reason."""
    section = auth_section()
    try:
        anonymous = DashboardSettings.one_from_env("anonymous_writes")
    except ConfigError as e:
        if section is None:
            return Writer(Mode.OFF, problem=str(e))
        anonymous = False  # ignored once a login is configured
    return decide(section, st.user.to_dict(), anonymous)


def sidebar() -> None:
    """Who is logged in and a log-out, or a log-in, when a provider is configured; nothing otherwise."""
    w = writer()
    if w.mode == Mode.LOGGED_IN:
        st.caption(f"Logged in as **{shared.md(w.name)}**")
        if st.button("Log out", key="auth_logout", icon=":material/logout:"):
            st.logout()
    elif w.mode == Mode.LOGGED_OUT:
        if st.button("Log in", key="auth_login", icon=":material/login:"):
            st.login()
    elif w.mode == Mode.MISCONFIGURED and configured():
        st.caption(f"Login: {w.problem}.")


def explain(w: Writer) -> None:
    """The one line above the write controls: who writes, or why nobody can."""
    if w.mode == Mode.LOGGED_IN:
        st.caption(f"Acknowledgements and silences are recorded as **{shared.md(w.name)}** (logged in).")
    elif w.mode == Mode.LOGGED_OUT:
        st.info("Log in (in the sidebar) to acknowledge or silence alerts: they record who you are.")
    elif w.mode == Mode.ANONYMOUS:
        st.warning(
            "No login is configured and LAGMON_DASHBOARD_ANONYMOUS_WRITES is on: anyone who can reach this page "
            "can acknowledge and silence alerts, and the names typed here are not verified."
        )
    elif w.problem:
        st.info(f"Acknowledging and silencing are off: {w.problem}.")
    else:
        st.info(
            "Acknowledging and silencing are off: no login is configured. Set up one (docs/production.md, "
            '"A login for the dashboard"), or set LAGMON_DASHBOARD_ANONYMOUS_WRITES=1 to let anyone who reaches '
            "this page write under a typed, unverified name."
        )
