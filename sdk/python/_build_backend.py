"""
The package's build backend: setuptools' own (``setuptools.build_meta``), taken from the Python
that builds, so that ``pip install ./sdk/python`` downloads nothing when setuptools is there.

pip builds in an isolated environment holding only the build requirements, which it fetches from
an index. This backend finds setuptools and wheel among the interpreter's own site packages
instead (Debian: ``python3-setuptools``, ``python3-wheel``), and asks pip only for those it does
not find (fetched then, as with any package).
"""

from __future__ import annotations

import importlib.util
import site
import sys
from types import ModuleType
from typing import Any, cast


def _with_site_packages() -> None:
    """Makes the interpreter's site packages importable (pip's isolated build hides them)."""
    paths = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        paths.append(site.getusersitepackages())
    for path in paths:
        if path not in sys.path:
            sys.path.append(path)


def _has(module: str) -> bool:
    """Whether ``module`` is importable, looking among the interpreter's site packages too."""
    if importlib.util.find_spec(module) is not None:
        return True
    _with_site_packages()
    importlib.invalidate_caches()
    return importlib.util.find_spec(module) is not None


def _missing() -> list[str]:
    """What pip must install to build a wheel: nothing when setuptools and wheel are here."""
    missing = []
    if not _has("setuptools"):
        missing.append("setuptools>=61")
    # setuptools 70.1+ builds wheels on its own; older ones need the wheel package
    if not _has("wheel") and (not _has("setuptools") or importlib.util.find_spec("setuptools.command.bdist_wheel") is None):
        missing.append("wheel")
    return missing


def _meta() -> ModuleType:
    _has("setuptools")
    from setuptools import build_meta  # type: ignore[import-untyped,unused-ignore]

    return cast(ModuleType, build_meta)


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """Only what this Python lacks (usually nothing)."""
    return _missing()


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    """Only what this Python lacks (usually nothing)."""
    return _missing()


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    """Only setuptools, when this Python lacks it."""
    return [r for r in _missing() if r.startswith("setuptools")]


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    """setuptools' hook."""
    return str(_meta().prepare_metadata_for_build_wheel(metadata_directory, config_settings))


def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None) -> str:
    """setuptools' hook."""
    return str(_meta().build_wheel(wheel_directory, config_settings, metadata_directory))


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    """setuptools' hook."""
    return str(_meta().build_sdist(sdist_directory, config_settings))


def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    """setuptools' hook (setuptools 64+)."""
    return str(_meta().prepare_metadata_for_build_editable(metadata_directory, config_settings))


def build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None) -> str:
    """setuptools' hook (setuptools 64+): ``pip install -e``."""
    return str(_meta().build_editable(wheel_directory, config_settings, metadata_directory))
