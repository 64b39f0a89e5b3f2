"""Options shared by the JVMs lagmon starts: dev-cluster nodes and Kafka's tools, Streams instances, Spark's driver."""

from __future__ import annotations

# C1, the quick compiler, only: a short-lived or lightly loaded JVM starts on about half the CPU, with no C2
# compiler threads taking a core; long heavy work runs slower (docs/configuration.md, the *_QUICK_JIT settings).
QUICK_JIT = "-XX:TieredStopAtLevel=1"
