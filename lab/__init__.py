"""The GPU-programming teaching lab's front doors: the `lab` CLI, the notebook API (lab.grade),
the Gradescope autograder, `lab batch`, `lab release` and the course server.

Importing this package never imports pyopencl or pycuda: backends load lazily. `lab.grade`
(lab/api.py: grading from a notebook) is imported on first use, so `import lab` and the `lab`
command stay light.
"""

__version__ = "0.1.0"
__all__ = ["__version__", "grade"]


def __getattr__(name: str) -> object:
    if name == "grade":
        from lab.api import grade

        return grade
    raise AttributeError(f"module 'lab' has no attribute {name!r}")
