"""The GPU path's checks and speed table in one run, its results in one file (docs/guide.md, "The
step on a GPU").

    python tools/gpu_check.py --out gpu_check.md              # on a machine with an NVIDIA GPU
    python tools/gpu_check.py --out gpu_check.md --speed block:1000000 pile:10000000
    python tools/gpu_check.py --out gpu_check.md --profile 50   # and where a step's time goes
    NUMBA_ENABLE_CUDASIM=1 python tools/gpu_check.py --n 100 --steps 20 --speed   # the checks alone, simulated

Checks: each case runs ``--steps`` steps on the CPU (serial) and on the GPU, each in a process of its
own, all at once (their compiles overlap), and the table gives, per case, the largest relative
difference of the energy budget's columns (against the total energy's scale) and of the positions
(against the diameter), whether the two runs are bitwise equal, and whether two runs on the GPU (with
128 and 64 threads per block) are. The cases: the torus impact
scene; the bonded block of ``tools/bench.py`` (``fcc_block``, three-spring bonds, Hertz contact, a
wall; N ≈ 4000) pressed against its wall; the frictional pile of ``tools/bench.py --pile`` (N ≈ 4000,
friction, rolling and twisting, restitution 0.5, gravity, five planes), and the same pile periodic in
x and y (``--pile --periodic``: a floor, nearest images), and the pile with JKR adhesion (work of
adhesion 0.5: formed flags in the histories, the hysteresis booked).

Speed: the bonded block and the frictional pile at the sizes of ``--speed`` on the GPU (20 steps of
warm-up, then ``--timed`` steps in one call: the state goes up at its start and comes back at its
end), particle-steps/s, and the bytes per particle of the arrays on the device.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parents[1]
CASES = ("torus", "block", "pile", "periodic", "sticky")


def build(case, n):
    """``(model, state, integrator, dt)`` of a case."""
    from bench import build_block, build_pile

    if case == "torus":
        from dem.scene import load_scene
        from dem.system import build_system

        scene = load_scene(ROOT / "scenes" / "torus_impact.toml")
        model, state = build_system(scene)
        return model, state, scene.simulation["integrator"], scene.simulation["dt"]
    if case == "block":
        return (*build_block(n), "rrp2", 1e-3)
    return (*build_pile(n, periodic=case == "periodic", adhesion=0.5 if case == "sticky" else 0.0), "rrp2", 1e-3)


def run_case(case, device, n, steps, start, save):
    """Run one case and save its energy budget and state (a worker process); on a GPU the case
    runs twice, the second time with 64 threads per block instead of 128, and ``again`` says
    whether the two gave the same bits."""
    from dem import gpu
    from dem.device import simulated
    from dem.simulation import Simulation

    runs = []
    for threads in (gpu.THREADS, 64)[:2 if device == "cuda" and not simulated() else 1]:
        gpu.THREADS = threads
        model, state, integrator, dt = build(case, n)
        sim = Simulation(model, state, integrator, dt, parallel=False, device=device)
        sim.advance(start)
        began = time.perf_counter()
        sim.advance(steps)
        runs.append((state, sim.energy_budget(), time.perf_counter() - began))
    (state, budget, seconds), last = runs[0], runs[-1]
    again = all(np.array_equal(getattr(state, k), getattr(last[0], k)) for k in ("position", "velocity",
                                                                              "angular_velocity"))
    np.savez(save, position=state.position, velocity=state.velocity, omega=state.angular_velocity,
             names=np.array(list(budget)), values=np.array(list(budget.values())), seconds=seconds,
             again=again and list(budget.values()) == list(last[1].values()))


def speed(case, n, timed):
    """``(particle-steps/s, bytes per particle on the GPU)`` of a case on the GPU."""
    from dem.simulation import Simulation

    model, state, integrator, dt = build(case, n)
    sim = Simulation(model, state, integrator, dt, device="cuda")
    sim.advance(20)
    began = time.perf_counter()
    sim.advance(timed)
    seconds = time.perf_counter() - began
    return model.n_bodies, model.n_bodies * timed / seconds, sim.loop.engine.__self__.device_bytes / model.n_bodies


def profile(case, n, steps):
    """``(seconds, {kernel: [launches, seconds, host seconds]})`` of ``steps`` steps of a case on
    the GPU, each launch waited for: seconds from the call to the end of the wait, host seconds
    until the call returns (a launch is asynchronous: that is numba-cuda's preparation of the
    arguments and the driver's launch, while the GPU waits); the rest: neighbour list builds,
    transfers, the host's own time."""
    from numba import cuda

    from dem.gpu import WatchedKernels
    from dem.simulation import Simulation

    model, state, integrator, dt = build(case, n)
    sim = Simulation(model, state, integrator, dt, device="cuda")
    sim.advance(20)
    loop = sim.loop.engine.__self__
    times = {}

    def timed(name, launch, arguments):
        cuda.synchronize()
        began = time.perf_counter()
        launch(*arguments)
        launched = time.perf_counter()
        cuda.synchronize()
        record = times.setdefault(name, [0, 0.0, 0.0])
        record[0] += 1
        record[1] += time.perf_counter() - began
        record[2] += launched - began

    loop.kernels = WatchedKernels(loop.kernels, timed)
    began = time.perf_counter()
    sim.advance(steps)
    return time.perf_counter() - began, times


def compare(case, files):
    cpu, gpu = (np.load(files[device]) for device in ("cpu", "cuda"))
    names = [str(x) for x in cpu["names"]]
    scale = max(abs(float(cpu["values"][names.index("total")])), 1e-300)
    columns = np.abs(cpu["values"] - gpu["values"]) / scale
    worst = names[int(np.argmax(columns))]
    position = float(np.abs(cpu["position"] - gpu["position"]).max())
    bitwise = all(np.array_equal(cpu[k], gpu[k]) for k in ("position", "velocity", "omega"))
    return (f"| {case} | {columns.max():.2e} ({worst}) | {position:.2e} | {'yes' if bitwise else 'no'} | "
            f"{'yes' if gpu['again'] else 'NO'} | {float(cpu['seconds']):.2f} | {float(gpu['seconds']):.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="gpu_check.md", help="the results file (Markdown)")
    parser.add_argument("--steps", type=int, default=100, help="steps of each check")
    parser.add_argument("--start", type=int, default=480, help="steps before the checked ones (block and pile: the "
                        "block reaches its wall at step 500)")
    parser.add_argument("--n", type=int, default=4000, help="N of the block and the pile of the checks")
    parser.add_argument("--speed", nargs="*", default=["block:1000000", "pile:1000000"], metavar="CASE:N",
                        help="the speed table's runs, in order (block or pile, and N)")
    parser.add_argument("--timed", type=int, default=200, help="timed steps of the speed table")
    parser.add_argument("--profile", type=int, default=0, metavar="STEPS",
                        help="also time each kernel of the block and the pile over STEPS steps")
    parser.add_argument("--profile-n", type=int, default=1_000_000, help="N of the profiled runs")
    parser.add_argument("--case", choices=CASES, help=argparse.SUPPRESS)
    parser.add_argument("--device", help=argparse.SUPPRESS)
    parser.add_argument("--save", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        run_case(args.case, args.device, args.n, args.steps, 0 if args.case == "torus" else args.start, args.save)
        return
    began = time.perf_counter()
    folder = Path(args.out).resolve().parent
    files = {(case, device): folder / f"gpu_check_{case}_{device}.npz" for case in CASES for device in ("cpu", "cuda")}
    workers = {key: subprocess.Popen([sys.executable, __file__, "--case", key[0], "--device", key[1], "--n",
                                      str(args.n), "--steps", str(args.steps), "--start", str(args.start), "--save",
                                      str(path)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for key, path in files.items()}
    lines = ["# GPU check", "", f"date: {time.strftime('%Y-%m-%d %H:%M')}", ""]
    try:
        name = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        name = "no nvidia-smi"
    import numba
    lines += [f"GPU: {name}; numba {numba.__version__}; simulated: {os.environ.get('NUMBA_ENABLE_CUDASIM', '0')}", ""]
    failures = []

    def finish(device):
        for key, worker in workers.items():
            if key[1] == device:
                output, _ = worker.communicate()
                if worker.returncode != 0:
                    last = output.strip().splitlines()[-1] if output.strip() else ""
                    failures.append(f"| {key[0]} on {key[1]} | failed: {last[:300]} | | | | | |")
                    print(output, file=sys.stderr)

    finish("cuda")  # the GPU's checks first: the speed table has the GPU to itself (its kernels are cached)
    speed_lines = []

    def progress():
        Path(args.out).write_text("\n".join(lines + [""] + speed_lines) + "\n")

    if args.speed:
        speed_lines += [f"## Speed ({args.timed} steps after 20)", "",
                        "| case | N | particle-steps/s | GPU bytes per particle |", "|---|---|---|---|"]
        for item in args.speed:
            case, n = item.split(":")
            try:
                bodies, rate, memory = speed(case, int(n), args.timed)
                speed_lines.append(f"| {case} | {bodies} | {rate:.3g} | {memory:.0f} |")
            except Exception as error:  # noqa: BLE001 (the table says what failed)
                speed_lines.append(f"| {case} | {n} | failed: {type(error).__name__}: {str(error)[:300]} | |")
            print(speed_lines[-1], flush=True)
            progress()
    if args.profile:
        speed_lines += ["", f"## Where a step's time goes (N = {args.profile_n}, {args.profile} steps, each launch "
                        "waited for)", "", "| case | kernel | launches | ms per step | of it launching (host) | share |",
                        "|---|---|---|---|---|---|"]
        for case in ("block", "pile"):
            try:
                seconds, times = profile(case, args.profile_n, args.profile)
            except Exception as error:  # noqa: BLE001
                speed_lines.append(f"| {case} | failed: {type(error).__name__}: {str(error)[:300]} | | | | |")
                continue
            for name, (launches, spent, host) in sorted(times.items(), key=lambda item: -item[1][1]):
                speed_lines.append(f"| {case} | {name} | {launches} | {1e3 * spent / args.profile:.3f} | "
                                   f"{1e3 * host / args.profile:.3f} | {spent / seconds:.1%} |")
            rest = seconds - sum(spent for _, spent, _ in times.values())
            speed_lines.append(f"| {case} | (rest: list builds, transfers, host) | | {1e3 * rest / args.profile:.3f} | "
                               f"| {rest / seconds:.1%} |")
            print("\n".join(speed_lines[-len(times) - 1:]), flush=True)
            progress()
    finish("cpu")
    lines += [f"## Checks ({args.steps} steps, CPU serial against the GPU)", "",
              "| case | max column difference / total energy | max position difference | bitwise | GPU twice, "
              "the same bits (128 and 64 threads per block) | CPU s | GPU s (its first launches compile) |",
              "|---|---|---|---|---|---|---|"] + failures
    for case in CASES:
        if all(files[(case, d)].exists() for d in ("cpu", "cuda")):
            lines.append(compare(case, {d: files[(case, d)] for d in ("cpu", "cuda")}))
    lines += [""] + speed_lines
    lines += ["", f"total {time.perf_counter() - began:.0f} s"]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
