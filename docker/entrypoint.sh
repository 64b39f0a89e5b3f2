#!/bin/sh
# One image, three roles: the first argument picks what this container runs.
set -eu
role=${1:-collect}
[ $# -gt 0 ] && shift
export LAGMON_ROLE="$role"
case "$role" in
  collect)   exec python -m monitor collect "$@" ;;
  dashboard) exec python -m monitor dashboard --server.address "${LAGMON_DASHBOARD_ADDRESS:-0.0.0.0}" \
                 --server.port "${LAGMON_DASHBOARD_PORT:-8501}" --server.headless true "$@" ;;
  analyze)   exec python -m monitor analyze --every "${LAGMON_ANALYZE_EVERY:-5m}" "$@" ;;
  *) echo "error: unknown role '$role' (use collect, dashboard or analyze)" >&2; exit 2 ;;
esac
