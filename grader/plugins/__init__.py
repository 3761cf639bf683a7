"""The plugins of a grading, registered in one list (grader.plugins.base says what one is).

A new plugin is one file declaring `PLUGIN` (an instance of its Plugin class) and one line: in
PLUGIN_MODULES, or its module's name in the LAB_PLUGINS environment variable (comma-separated;
read by every process, the grading workers included, as LAB_BACKENDS is for backends).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import cache
from typing import Any

from grader import settings
from grader.plugins.base import Finding, Option, Plugin, PluginState

__all__ = ["Finding", "Option", "Plugin", "PluginState", "named", "option_values", "registered"]

PLUGIN_MODULES = (
    "grader.plugins.sanitizer",
    "grader.plugins.counters",
)
EXTRA_ENV = settings.PLUGINS.name  # more plugins' modules, comma-separated, after PLUGIN_MODULES


def modules() -> tuple[str, ...]:
    """The modules that declare the plugins: PLUGIN_MODULES, then LAB_PLUGINS's."""
    extra = settings.value(settings.PLUGINS)
    return PLUGIN_MODULES + tuple(m for m in extra if m not in PLUGIN_MODULES)


@cache
def _load(names: tuple[str, ...]) -> tuple[Plugin, ...]:
    found = []
    for name in names:
        plugin = getattr(importlib.import_module(name), "PLUGIN", None)
        if not isinstance(plugin, Plugin):
            raise ImportError(f"{name} declares no PLUGIN (a grader.plugins.Plugin)")
        found.append(plugin)
    return tuple(found)


def registered() -> tuple[Plugin, ...]:
    """Every plugin, in the order their steps run and their sections are shown."""
    return _load(modules())


def named(name: str) -> Plugin | None:
    return next((p for p in registered() if p.name == name), None)


def option_values(plugins: Mapping[str, Any] | None) -> dict[str, Any]:
    """GradeOptions.plugins with every registered plugin's default filled in. Raises ValueError
    for a plugin not registered."""
    given = dict(plugins or {})
    unknown = sorted(set(given) - {p.name for p in registered()})
    if unknown:
        raise ValueError(f"no grading plugin named {', '.join(unknown)}")
    return {p.name: given.get(p.name, p.option.default) for p in registered()}
