"""A device's name as every process on the machine gives it, whatever it was opened through:
the key of its shared queue (grader.device_queue).

A GPU is named by its PCI address (`pci:0000:41:00`), which CUDA and NVIDIA's OpenCL both
report, so a `.cu` and a `.cl` grading on one GPU wait in one line, and CUDA_VISIBLE_DEVICES
or a different device order changes nothing. Where the driver gives no PCI address (PoCL, a
CPU), it is `opencl:<platform>:<device name>:<index>`.
"""

from __future__ import annotations

from typing import Any


def _pci(domain: int, bus: int, device: int) -> str:
    return f"pci:{domain:04x}:{bus:02x}:{device:02x}"


def stable_id(backend: Any, index: int) -> str:
    """`backend`: an open lab.backends Backend; `index`: the backend's device index."""
    info = backend.info
    if info.backend == "cuda":
        try:
            import pycuda.driver as drv

            attr = drv.device_attribute
            device = backend.device
            return _pci(device.get_attribute(attr.PCI_DOMAIN_ID), device.get_attribute(attr.PCI_BUS_ID),
                        device.get_attribute(attr.PCI_DEVICE_ID))
        except Exception:  # noqa: BLE001 - a driver without the attributes: named by index
            return f"cuda:{info.name}:{index}"
    cl_device: Any = getattr(backend, "device", None)  # None: no such attribute, an error caught below
    try:
        # NVIDIA's OpenCL (cl_nv_device_attribute_query): the PCI address CUDA reports too.
        return _pci(int(cl_device.pci_domain_id_nv), int(cl_device.pci_bus_id_nv), int(cl_device.pci_slot_id_nv))
    except Exception:  # noqa: BLE001 - not NVIDIA's, or an older driver
        pass
    return f"{info.backend}:{info.platform}:{info.name}:{index}"
