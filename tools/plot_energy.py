"""Plot a run's energy budget, energy error and momenta from ``RUN_DIR/energy.csv``.

    python tools/plot_energy.py output/torus_impact [--out energy.png] [--units SI]

Writes ``RUN_DIR/energy.png`` unless ``--out`` says otherwise (see `dem.plotting.plot_energy`).
"""

import argparse
import sys
from pathlib import Path

from dem.plotting import UNIT_SYSTEMS, plot_energy


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="output folder of a run (holds energy.csv)")
    parser.add_argument("--out", type=Path, help="image file to write (default RUN_DIR/energy.png)")
    parser.add_argument("--units", choices=sorted(UNIT_SYSTEMS),
                        help="unit system the scene was written in, for the axis labels (default: 'scene units')")
    args = parser.parse_args(argv)
    try:
        out = plot_energy(args.run_dir, args.out, args.units)
    except (OSError, ValueError) as error:
        print(f"plot_energy: error: {error}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
