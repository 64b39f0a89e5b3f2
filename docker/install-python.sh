#!/bin/sh
# The image's Python step, kept in one script so a test can run it outside Docker:
# a virtual environment at PREFIX/venv holding lagmon's runtime requirements only.
# Usage: docker/install-python.sh PREFIX   (run from the repository root)
set -eu
prefix=${1:?usage: docker/install-python.sh PREFIX}
python3 -m venv "$prefix/venv"
"$prefix/venv/bin/python" -m pip install --quiet --upgrade pip
"$prefix/venv/bin/python" -m pip install --quiet -r requirements.txt
