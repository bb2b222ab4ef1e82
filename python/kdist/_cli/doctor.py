"""`kdist doctor`: the command line of the report (doctor_report.py) of what
kdist.initialize() would do in this process, and what is around it."""

from __future__ import annotations

import argparse

from kdist._cli import arguments

_DESCRIPTION = """\
Show how kdist.initialize() would configure this process, without starting
anything: every resolved value with its source (argument, KERAS_DISTRIBUTION_*
or KDIST_* variable, detected scheduler, default), what each scheduler detector
makes of the environment, the accelerators this machine has (found without
importing JAX: device nodes such as /dev/nvidia*, /dev/accel*, /dev/kfd, and
variables such as CUDA_VISIBLE_DEVICES), and a bounded TCP probe of the
coordinator's address.

exit status: 0 when the configuration is valid, 1 when it is not, 2 on a usage
error. JAX is imported only with --devices.
"""

_EPILOG = """\
examples:
  kdist doctor
  KERAS_DISTRIBUTION_JOB_ADDRESSES=10.0.0.1:1234 KERAS_DISTRIBUTION_NUM_PROCESSES=2 \\
    KERAS_DISTRIBUTION_PROCESS_ID=1 kdist doctor
  srun --ntasks=2 kdist doctor --no-probe      # what each Slurm task would resolve
  mpirun -n 4 kdist doctor --exit-zero          # every rank reports, valid or not
  kdist doctor --json | python -m json.tool
  kdist doctor --devices                        # also ask JAX which devices it sees
"""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `kdist doctor` and its options to the `kdist` command line."""
    parser = commands.add_parser(
        "doctor",
        help="show the resolved configuration, the detected scheduler, the local "
        "accelerators and whether the coordinator answers",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object for machines")
    parser.add_argument(
        "--devices",
        action="store_true",
        help="also import JAX and list the devices it sees (starts JAX's backend)",
    )
    parser.add_argument(
        "--no-probe", action="store_true", help="do not connect to the coordinator's address"
    )
    parser.add_argument(
        "--probe-timeout",
        type=arguments.seconds,
        default=2.0,
        metavar="S",
        help="give up connecting to the coordinator after S seconds (default: 2)",
    )
    parser.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 once the report is printed, even when the configuration is invalid: "
        "under mpirun, mpiexec or srun a rank that exits non-zero gets the others killed "
        "before they report",
    )

    parser.set_defaults(run=_run_from)


def _run_from(args: argparse.Namespace) -> int:
    # The report imports the compiled core: only once the command runs.
    from kdist._cli import doctor_report

    return doctor_report.run(
        as_json=args.json,
        with_devices=args.devices,
        probe=not args.no_probe,
        probe_timeout=args.probe_timeout,
        exit_zero=args.exit_zero,
    )
