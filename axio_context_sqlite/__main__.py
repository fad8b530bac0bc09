"""``python -m axio_context_sqlite``: the ``axio-context`` command line."""

from .cli import main

if __name__ == "__main__":
    main()
