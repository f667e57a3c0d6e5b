"""`vllmkit --help` from the help cache (cli/entry.py, issue #9 start-up goal): the console script
prints exactly what the full typer app prints, without importing typer once the cache is filled; a
different help width is a different cache entry. Real processes, a real console script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CONSOLE = str(Path(sys.executable).with_name("vllmkit"))
FULL_APP = [sys.executable, "-c", "import sys; from vllmkit.cli.app import main; sys.argv[0] = 'vllmkit'; main()"]


def _env(tmp_path: Path, columns: int) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": str(columns)}


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_cached_help_is_the_apps_help(tmp_path: Path) -> None:
    env = _env(tmp_path, 100)
    full = _run([*FULL_APP, "--help"], env)
    assert full.returncode == 0 and full.stdout.startswith("Usage: vllmkit")
    first = _run([CONSOLE, "--help"], env)  # miss: rendered and stored
    assert (first.returncode, first.stdout) == (0, full.stdout)
    stored = list((tmp_path / "cache" / "vllmkit").glob("help-*-w100.txt"))
    assert len(stored) == 1 and stored[0].read_text() == full.stdout
    second = _run([CONSOLE, "-h"], env)  # hit
    assert (second.returncode, second.stdout) == (0, full.stdout)


def test_a_hit_does_not_import_typer_and_widths_do_not_mix(tmp_path: Path) -> None:
    probe = ("import sys; sys.argv = ['vllmkit', '--help']\n"
             "from vllmkit.cli import entry\n"
             "try:\n    entry.main()\nexcept SystemExit:\n    pass\n"
             "print('typer' in sys.modules, file=sys.stderr)")
    narrow, wide = _env(tmp_path, 60), _env(tmp_path, 110)
    assert _run([sys.executable, "-c", probe], narrow).stderr.strip() == "True"  # miss renders with typer
    hit = _run([sys.executable, "-c", probe], narrow)
    assert hit.stderr.strip() == "False" and hit.stdout == _run([*FULL_APP, "--help"], narrow).stdout
    # another width is another entry, rendered by the app at that width
    assert _run([CONSOLE, "--help"], wide).stdout == _run([*FULL_APP, "--help"], wide).stdout
    assert len(list((tmp_path / "cache" / "vllmkit").glob("help-*.txt"))) == 2


def test_other_arguments_take_the_full_app(tmp_path: Path) -> None:
    env = _env(tmp_path, 80)
    out = _run([CONSOLE, "plan", "--help"], env)
    assert out.returncode == 0 and "Usage: vllmkit plan" in out.stdout
    bad = _run([CONSOLE, "--bogus"], env)
    assert bad.returncode == 2 and not (tmp_path / "cache" / "vllmkit").exists()
