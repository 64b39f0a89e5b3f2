#!/bin/sh
# Docker HEALTHCHECK for the role the entrypoint started.
set -eu
case "${LAGMON_ROLE:-collect}" in
  collect)   exec python -m monitor healthcheck ;;
  dashboard) exec python -c "import urllib.request as u; u.urlopen('http://127.0.0.1:${LAGMON_DASHBOARD_PORT:-8501}/_stcore/health', timeout=5)" ;;
  *)         exit 0 ;;
esac
