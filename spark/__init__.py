"""PySpark analysis of lagmon's history: lag trends and rebalance frequency."""
