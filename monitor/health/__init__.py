"""Health: the one judge of partition and group status and lag in seconds (docs/health.md).

- rules   pure: Burrow's window rules and the stuck-consumer rule, HealthSettings
- engine  HealthEngine: windows, log-end histories and verdicts in memory; observe(snapshot) -> HealthReport
- report  HealthReport, GroupHealth, PartitionHealth: what every consumer reads
- stage   HealthStage: the engine's edges in the store (saved state, status history)
"""

from monitor.health.engine import HealthEngine
from monitor.health.report import GroupHealth, HealthReport, PartitionHealth
from monitor.health.rules import HealthSettings
from monitor.health.stage import HealthStage

__all__ = ["GroupHealth", "HealthEngine", "HealthReport", "HealthSettings", "HealthStage", "PartitionHealth"]
