"""LAGMON_OFFSETS_TOPIC and LAGMON_OFFSETS_TOPIC_SPAN: parsed strictly, named when wrong."""

from __future__ import annotations

import pytest

from monitor.config import load_settings
from monitor.models import ConfigError


def test_the_tail_is_auto_with_a_day_of_history_by_default():
    settings = load_settings({})
    assert (settings.tail.mode, settings.tail.span_s) == ("auto", 86400.0)


def test_the_tail_settings_are_read():
    settings = load_settings({"LAGMON_OFFSETS_TOPIC": " OFF ", "LAGMON_OFFSETS_TOPIC_SPAN": "2h"})
    assert (settings.tail.mode, settings.tail.span_s) == ("off", 7200.0)


@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("LAGMON_OFFSETS_TOPIC", "maybe", "LAGMON_OFFSETS_TOPIC: 'maybe' is not one of auto, on, off"),
        ("LAGMON_OFFSETS_TOPIC_SPAN", "a week", "LAGMON_OFFSETS_TOPIC_SPAN: 'a week' is not a duration"),
    ],
)
def test_a_bad_tail_setting_names_the_variable(variable, value, message):
    with pytest.raises(ConfigError) as info:
        load_settings({variable: value})
    assert message in str(info.value)
