"""The command line, one module per family of commands; `python -m monitor` (monitor/__main__.py) wires them."""
