"""The GPU-programming teaching lab: stages, backends and the `lab` CLI.

Importing this package never imports pyopencl or pycuda: backends load lazily.
"""

__version__ = "0.1.0"
