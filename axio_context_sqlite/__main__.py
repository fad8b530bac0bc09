"""``python -m axio_context_sqlite``: the ``axio-context`` command line."""

from .cli.commands import main

if __name__ == "__main__":
    main()
