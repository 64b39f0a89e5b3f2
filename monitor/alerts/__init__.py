"""Alerts: rules from a file, an Alertmanager-like lifecycle, chat messages via Apprise, an outbox.

- rules      parse the rules file (YAML/TOML) into Rule/RuleSet; clear errors with line numbers
- lifecycle  pure: facts -> conditions -> pending/firing/resolved changes and notifications
- message    pure: the phone-sized chat message and the dashboard link
- engine     the collector's per-cycle observer (status history, alert state, outbox rows)
- notify     Apprise sending and the outbox sender thread
"""
