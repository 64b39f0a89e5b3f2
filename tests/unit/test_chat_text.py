"""Names lagmon does not control reach chat as plain text that notifies nobody.

A group id may be any string. Sent through Apprise to a Mattermost webhook served by a local
HTTP server: Mattermost renders Markdown, has no title (Apprise puts the title into the body) and
is handed plain text as it is, so a name could become a link, an image or an `@channel`.
"""

from __future__ import annotations

import json

from monitor.alerts.message import compose_message
from monitor.alerts.notify import send_message
from monitor.models import FIRING, Alert

HOSTILE = "@channel <!here> [click](http://evil.example) ![x](http://evil.example/x.png) *bold* <b>x</b>"


def test_a_hostile_group_id_reaches_a_markdown_chat_as_text_that_mentions_nobody(httpserver):
    httpserver.expect_request("/hooks/t0ken", method="POST").respond_with_data("ok")
    alert = Alert("behind", "prod", HOSTILE, "", FIRING, "warning", 0, 0, summary=f"{HOSTILE} @ prod: lag 50")
    title, body = compose_message(alert, "firing", 1000)
    assert send_message(f"mmost://{httpserver.host}:{httpserver.port}/t0ken", title, body)
    [(request, _)] = httpserver.log
    text = json.loads(request.get_data())["text"]
    assert "@channel" not in text and "<!here>" not in text  # no mention reaches the service
    assert "](http" not in text and "<b>" not in text  # no link, image or tag either
    assert HOSTILE in text.replace("\u200b", "")  # and the name still reads as it is
