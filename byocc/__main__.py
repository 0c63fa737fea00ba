"""``python -m byocc``: the same as the ``byocc`` command."""

from byocc.cli import main

if __name__ == "__main__":
    main()
