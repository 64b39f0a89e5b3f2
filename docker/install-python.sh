#!/bin/sh
# The image's Python step, kept in one script so a test can run it outside Docker:
# a virtual environment at PREFIX/venv holding lagmon's runtime requirements only
# (requirements.txt for the full image, requirements-collector.txt for the collector target).
# Usage: docker/install-python.sh PREFIX [REQUIREMENTS [PIP-OPTION...]]   (run from the repository root)
# The image byte-compiles what it installs (its site-packages are not writable at run time); the tests
# pass --no-compile, which takes the step from ~54 to ~22 s and changes nothing they check.
set -eu
prefix=${1:?usage: docker/install-python.sh PREFIX [REQUIREMENTS [PIP-OPTION...]]}
requirements=${2:-requirements.txt}
shift $(($# < 2 ? $# : 2))
python3 -m venv "$prefix/venv"
"$prefix/venv/bin/python" -m pip install --quiet --upgrade pip
"$prefix/venv/bin/python" -m pip install --quiet "$@" -r "$requirements"
