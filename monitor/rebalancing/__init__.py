"""What both sources of rebalances share: who owns what, and one row per rebalance.

Polling (monitor/events.py) and the offsets-topic tail (monitor/offsets_topic/history.py)
see the same rebalances from two sides; these rules are written once for both
(docs/architecture.md section 5).
"""
