"""What the installed vLLM is, remembered between commands, and how to tell it has changed.

Asking the vLLM interpreter about its install costs a process start (~1 s on a 2-core box) and
building its serve parser costs an import of vLLM (~19 s), so `serve --dry-run` remembers both in the
cache folder. A remembered answer is used only while the install it describes is untouched: the
modification times (ns) of the interpreter, the vllm package folder and its __init__.py, its
.dist-info folder, and the site-packages folder holding them (any pip install/uninstall into that
environment adds or removes entries there, which changes the folder's mtime) must all be unchanged.
An upgrade, a reinstall of the same version or an edit of an editable install therefore re-probes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from vllmkit.dirs import user_dir, write_text_atomic
from vllmkit.engine.detect import VllmInstall

Stamp = dict[str, int]  # path -> st_mtime_ns


def install_stamp(install: VllmInstall) -> Stamp | None:
    """The paths that change when this vLLM install changes, with their mtimes; None when unknown."""
    if not install.installed or not install.location:
        return None
    location = Path(install.location)
    paths = [Path(install.python), location, location / "__init__.py", location.parent]
    if install.dist_info:
        paths.append(Path(install.dist_info))
    stamp: Stamp = {}
    for path in paths:
        try:
            stamp[str(path)] = os.stat(path).st_mtime_ns
        except OSError:
            return None
    return stamp


def stamp_matches(stamp: Mapping[str, int] | None) -> bool:
    if not stamp:
        return False
    for path, mtime in stamp.items():
        try:
            if os.stat(path).st_mtime_ns != mtime:
                return False
        except OSError:
            return False
    return True


def _install_file(env: Mapping[str, str], python: str) -> Path:
    key = hashlib.sha256(os.path.abspath(python).encode()).hexdigest()[:16]
    return user_dir("cache", env) / "vllm-install" / f"{key}.json"


def cached_install(env: Mapping[str, str], python: str) -> VllmInstall | None:
    """The remembered install of `python`'s vLLM, if nothing about it changed since."""
    try:
        doc = json.loads(_install_file(env, python).read_text())
        install = VllmInstall.model_validate(doc["install"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if install.python != python or not stamp_matches(doc.get("stamp")):
        return None
    install.source = "cache"
    return install


def remember_install(env: Mapping[str, str], install: VllmInstall) -> None:
    stamp = install_stamp(install)
    if stamp is None:
        return  # nothing stable to check it against later
    path = _install_file(env, install.python)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps({"stamp": stamp, "install": install.model_dump(mode="json")}))
    except OSError:
        pass  # a read-only cache only costs the next probe
