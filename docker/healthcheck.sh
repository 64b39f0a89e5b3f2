#!/bin/sh
# Docker HEALTHCHECK for the role the entrypoint started, with the options it started it with: the
# entrypoint records them in LAGMON_ROLE_FILE (without that file, LAGMON_ROLE names the role).
set -eu
role_file=${LAGMON_ROLE_FILE:-/tmp/lagmon-role}
role=${LAGMON_ROLE:-collect}
if [ -r "$role_file" ]; then
  role=$(tr '\0' '\n' < "$role_file" | head -n 1)
fi
case "$role" in
  collect)   exec python -m monitor healthcheck --role-file "$role_file" ;;
  dashboard) exec python -c '
import sys, urllib.request
port, path = sys.argv[1], sys.argv[2]
try:
    args = [a.decode() for a in open(path, "rb").read().split(b"\0")[1:-1]]
except OSError:
    args = []
for i, arg in enumerate(args):  # the role options own --server.port wins (the last one, as in Streamlit)
    if arg == "--server.port" and i + 1 < len(args):
        port = args[i + 1]
    elif arg.startswith("--server.port="):
        port = arg.split("=", 1)[1]
urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5)
' "${LAGMON_DASHBOARD_PORT:-8501}" "$role_file" ;;
  *)         exit 0 ;;
esac
