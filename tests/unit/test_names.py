"""The names lagmon keeps for ids Kafka accepts but no store keys on, and how they are shown (monitor.names)."""

from __future__ import annotations

import struct

import pandas as pd

from app_pages.shared import spreadsheet_safe
from monitor.alerts.message import describe_where
from monitor.models import FIRING, Alert
from monitor.names import MAX_CHARS, is_stand_in, plain_text, stored_name, visible
from monitor.offsets_topic.decoder import decode
from monitor.offsets_topic.share_state import decode_share_state
from monitor.output import render_table

PLAIN = ["orders", "é" * MAX_CHARS, "rtl-\u202egnp.exe", "@channel <!here> [x](http://e.example)", '=HYPERLINK("x")']


def test_a_plain_id_is_its_own_name():
    assert [stored_name(g) for g in PLAIN] == PLAIN
    assert not any(is_stand_in(g) for g in PLAIN)


def test_an_id_with_a_nul_or_too_long_gets_a_short_readable_stand_in_of_its_own():
    ids = ["a\x00b", "a\x00c", "x" * (MAX_CHARS + 1), "x" * 10_000, "x" * 10_000 + "\x00"]
    names = [stored_name(g) for g in ids]
    assert len(set(names)) == len(ids)  # the digest tells apart ids that share a head
    assert all(is_stand_in(n) and "\x00" not in n and len(n.encode()) < 300 for n in names)
    assert names[0].startswith("a\ufffdb…#") and names[3].startswith("x" * 80 + "…#")
    assert [stored_name(g) for g in ids] == names  # the same in every process: shards and alerts agree
    assert [stored_name(n) for n in names] == names  # a stored name is stored as itself


def test_plain_text_loses_only_nuls():
    assert plain_text("client\x00id") == "client\ufffdid"
    assert plain_text("client-1") == "client-1"
    assert plain_text(None) is None


def test_controls_and_direction_overrides_show_as_escapes_in_the_cli_and_in_chat():
    hostile = "g-\u202egnp.exe\x1b[2J\x00é"
    assert visible(hostile) == "g-\\u202egnp.exe\\u001b[2J\\u0000é"
    assert visible("a-b_c.d é 漢") == "a-b_c.d é 漢"
    assert render_table([{"GROUP": hostile}], "none").splitlines()[1] == visible(hostile)
    alert = Alert("behind", "c1", hostile, "", FIRING, "warning", 0, 0)
    assert describe_where(alert) == f"{visible(hostile)} @ c1"


def test_the_offsets_topic_decoders_name_groups_as_the_sampler_does():
    group = "x" * 300 + "\x00"

    def string(s: str) -> bytes:
        return struct.pack(">h", len(s.encode())) + s.encode()

    commit_key = struct.pack(">h", 1) + string(group) + string("orders") + struct.pack(">i", 0)
    commit = struct.pack(">hqi", 3, 42, 0) + string("") + struct.pack(">q", 0)
    assert decode(commit_key, commit).group == stored_name(group)
    assert decode(commit_key, commit).group == stored_name(group)  # again, from the decoded-key cache
    share_key = struct.pack(">h", 0) + string(group) + bytes(16) + struct.pack(">i", 0)
    assert decode_share_state(share_key, None).group == stored_name(group)


def test_cells_a_spreadsheet_would_run_are_shown_and_exported_as_text():
    df = pd.DataFrame(
        {
            "group": ['=HYPERLINK("http://e.example")', "+1+cmd|' /C calc'!A0", "@SUM(A1)", "-1+1", "orders", None],
            "delta": ["-12", "+3.5", "0", "1", "2", "3"],
            "lag": [1, -2, 3, 4, 5, 6],
        }
    )
    safe = spreadsheet_safe(df)
    assert list(safe["group"]) == [
        '\'=HYPERLINK("http://e.example")',
        "'+1+cmd|' /C calc'!A0",
        "'@SUM(A1)",
        "'-1+1",
        "orders",
        None,
    ]
    assert list(safe["delta"]) == list(df["delta"]) and list(safe["lag"]) == list(df["lag"])  # numbers stay
    assert df["group"][0].startswith("=")  # the caller's frame (row selection reads it) is left as it was
