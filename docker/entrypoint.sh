#!/bin/sh
# One image, three roles: the first argument picks what this container runs.
# The role and its arguments are recorded in LAGMON_ROLE_FILE (each ending in a NUL byte), where
# docker/healthcheck.sh reads them: Docker runs a HEALTHCHECK with the container's configured
# environment, not with what this script exports, so `collect --interval 30s --shard 2/3` reaches
# the health check only this way.
set -eu
role=${1:-collect}
[ $# -gt 0 ] && shift
export LAGMON_ROLE="$role"
role_file=${LAGMON_ROLE_FILE:-/tmp/lagmon-role}
if ! { printf '%s\0' "$role" "$@" > "$role_file"; } 2>/dev/null; then
  echo "warning: cannot write $role_file (set LAGMON_ROLE_FILE to a writable path): the health check will judge" \
       "by LAGMON_POLL_INTERVAL and LAGMON_SHARD, not by this role's options" >&2
fi
# The collector-only image (docker build --target collector) has no Streamlit, PySpark or Java.
has_module() { python -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)"; }
not_in_this_image() {
  echo "error: role '$role' needs $1, which this image does not have: it is the collector-only target;" \
       "run $role from the full image (docker build without --target)" >&2
  exit 2
}
case "$role" in
  collect)   exec python -m monitor collect "$@" ;;
  dashboard) has_module streamlit || not_in_this_image Streamlit
             exec python -m monitor dashboard --server.address "${LAGMON_DASHBOARD_ADDRESS:-0.0.0.0}" \
                 --server.port "${LAGMON_DASHBOARD_PORT:-8501}" --server.headless true "$@" ;;
  analyze)   has_module pyspark || not_in_this_image "PySpark and Java"
             exec python -m monitor analyze --every "${LAGMON_ANALYZE_EVERY:-5m}" "$@" ;;
  *) echo "error: unknown role '$role' (use collect, dashboard or analyze)" >&2; exit 2 ;;
esac
