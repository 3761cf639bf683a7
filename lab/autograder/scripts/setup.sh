#!/usr/bin/env bash
# The lab's Gradescope autograder, setup.sh: Gradescope runs it once, as root, when it builds
# the autograder's image (Ubuntu, with python3). Run again, it changes nothing already in place.
#
# What it installs:
#   - Python 3.11 or newer: the image's own where it is new enough (Ubuntu 24.04: 3.12),
#     otherwise Ubuntu's python3.11 package (Ubuntu 22.04's python3 is 3.10); and its venv
#     module (python3.X-venv) where the image lacks it
#   - a virtual environment, $ROOT/lab-venv, holding the lab (the wheel in wheels/) with its
#     pocl extra from PyPI: pyopencl and pocl-binary-distribution (OpenCL on the CPU), and
#     numpy, typer, rich and jinja2
#   - bubblewrap, the grading worker's sandbox (best effort: without it, graded unsandboxed)
# Then it grades each stage's reference kernel once: the build fails, with the reason in
# Gradescope's build log, where one is not right here; and the kernel caches are filled.
#
# LAB_AUTOGRADER_ROOT moves /autograder (for trying this outside Gradescope).
set -euo pipefail

ROOT="${LAB_AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"
VENV="$ROOT/lab-venv"
UPDATED=""

say() { printf 'setup.sh: %s\n' "$*"; }

apt_install() {
    say "installing with apt-get: $*"
    export DEBIAN_FRONTEND=noninteractive
    if [ -z "$UPDATED" ]; then
        apt-get update -q
        UPDATED=yes
    fi
    apt-get install -y -q --no-install-recommends "$@"
}

new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }

find_python() {
    local candidate
    for candidate in python3 python3.13 python3.12 python3.11; do
        if command -v "$candidate" >/dev/null 2>&1 && new_enough "$(command -v "$candidate")"; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

# 1. Python 3.11 or newer, with its venv module
if ! PYTHON="$(find_python)"; then
    apt_install python3.11 python3.11-venv
    PYTHON="$(find_python)" || { say "error: no Python 3.11 or newer could be installed"; exit 1; }
fi
VERSION="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if ! "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; then
    apt_install "python${VERSION}-venv"
fi
say "Python $VERSION: $PYTHON"

# 2. The virtual environment, and the lab in it
if ! new_enough "$VENV/bin/python"; then
    rm -rf "$VENV"
    say "making the virtual environment $VENV"
    "$PYTHON" -m venv "$VENV"
fi
shopt -s nullglob
WHEELS=("$SOURCE"/wheels/*.whl)
if [ "${#WHEELS[@]}" -ne 1 ]; then
    say "error: expected one wheel of the lab in $SOURCE/wheels, found ${#WHEELS[@]}; rebuild the zip with lab gradescope"
    exit 1
fi
say "installing ${WHEELS[0]##*/} with its pocl extra"
"$VENV/bin/python" -m pip install --disable-pip-version-check -q "${WHEELS[0]}[pocl]"
# the lab itself from this zip's wheel, even where one of the same version is already there
"$VENV/bin/python" -m pip install --disable-pip-version-check -q --force-reinstall --no-deps "${WHEELS[0]}"

# 3. The worker's sandbox (a container may not allow it: the grader then says so and goes on)
if ! command -v bwrap >/dev/null 2>&1; then
    apt_install bubblewrap || say "bubblewrap could not be installed: uploads are graded without the sandbox"
fi

# 4. Each stage's reference kernel, graded once
say "grading each stage's reference kernel"
LAB_COURSE_ROOT="$SOURCE/course" "$VENV/bin/python" -I -m lab.autograder --warm-up
say "done"
