# The two commands of the README, and the pieces they are made of.
.PHONY: setup demo test test-fast clean

setup:
	@bash scripts/setup.sh

demo: setup
	.venv/bin/python -m monitor demo

test: setup  ## three workers, a file each at a time (pytest-xdist; docs/development.md says why three)
	.venv/bin/python -m pytest -n 3 --dist loadfile

test-fast: setup  ## pure unit tests only, no broker
	.venv/bin/python -m pytest -m "not integration and not spark and not e2e"

clean:
	-.venv/bin/python -m monitor devcluster stop 2>/dev/null
	rm -rf .lagmon
