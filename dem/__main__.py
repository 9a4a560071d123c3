import sys

from .cli import script

sys.exit(script())
