#!/bin/sh
# The image's Python step, kept in one script so a test can run it outside Docker:
# a virtual environment at PREFIX/venv holding lagmon's runtime requirements only
# (requirements.txt for the full image, requirements-collector.txt for the collector target).
# Usage: docker/install-python.sh PREFIX [REQUIREMENTS]   (run from the repository root)
set -eu
prefix=${1:?usage: docker/install-python.sh PREFIX [REQUIREMENTS]}
requirements=${2:-requirements.txt}
python3 -m venv "$prefix/venv"
"$prefix/venv/bin/python" -m pip install --quiet --upgrade pip
"$prefix/venv/bin/python" -m pip install --quiet -r "$requirements"
