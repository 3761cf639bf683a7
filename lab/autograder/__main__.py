"""`python -m lab.autograder`: what run_autograder runs in Gradescope's container for each
upload (grade it, write results.json; the lines printed go to Gradescope's stdout, which only
instructors see). `python -m lab.autograder --warm-up`: what setup.sh runs once when the image
is built (grade each stage's reference kernel; exit 1 where one is not right there)."""

from __future__ import annotations

import sys

from lab.autograder.paths import AutograderPaths

USAGE = "usage: python -m lab.autograder [--warm-up]"


def sandbox_posture() -> str:
    """Why gradings here run without the sandbox, or "" where they run in it."""
    from grader import sandbox

    try:
        plan = sandbox.decide()
    except sandbox.SandboxUnavailable as error:
        return str(error)
    return plan if isinstance(plan, str) else ""


def main(argv: list[str]) -> int:
    paths = AutograderPaths.from_environment()
    if argv == ["--warm-up"]:
        from grader.course.catalog import UnknownStageError
        from grader.course.spec import SpecError
        from grader.sandbox import INSTALL_HINT
        from lab.autograder.config import ConfigError
        from lab.autograder.run import warm_up

        try:
            done = warm_up(paths)
        except (ConfigError, SpecError, UnknownStageError) as error:
            print(f"error: {error}", flush=True)
            return 1
        for item in done:
            print(f"{item.stage}: reference kernel {item.status} ({item.message})", flush=True)
        posture = sandbox_posture()
        if posture:
            print(f"warning: uploads will be graded without a sandbox ({posture}); "
                  f"{INSTALL_HINT}", flush=True)
        wrong = [item.stage for item in done if not item.ok]
        if wrong:
            print(f"error: the reference kernel of {', '.join(wrong)} is not right on this machine: "
                  f"uploads for it would be graded wrongly", flush=True)
        return 1 if wrong else 0
    if argv:
        print(USAGE, file=sys.stderr)
        return 2
    from grader.course.sinks import for_text
    from lab.autograder.run import run

    for line in run(paths):  # file names in it are the student's: shown, never acting on a terminal
        print(for_text(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
