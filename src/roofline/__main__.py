"""``python -m roofline``: the same command line as the ``roofline`` script."""

from roofline.cli import run

if __name__ == "__main__":
    run()
