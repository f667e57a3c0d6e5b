"""`vllmkit --help` and every command's help: a one-line description per command, help on every option,
and shell completion that installs (issue: fit the ecosystem)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from tests.clirun import invoke

from vllmkit.cli.app import app


def _commands():
    root = typer.main.get_command(app)
    stack = [((), root)]
    while stack:
        path, cmd = stack.pop()
        subs = getattr(cmd, "commands", None)
        if isinstance(subs, dict) and subs:
            for name, sub in subs.items():
                stack.append(((*path, name), sub))
        elif path:
            yield " ".join(path), cmd


COMMANDS = sorted(_commands(), key=lambda c: c[0])


def test_every_command_is_listed_with_a_one_line_description() -> None:
    res = invoke(["--help"], env={"COLUMNS": "80"})
    assert res.exit_code == 0
    listed = res.stdout.split("Commands:", 1)[1].splitlines()
    top = {path.split()[0] for path, _ in COMMANDS}
    for name in top:
        line = next((ln for ln in listed if ln.split()[:1] == [name]), None)
        assert line is not None, name
        description = line.split(None, 1)[1] if len(line.split()) > 1 else ""
        assert description and not description.endswith("..."), (name, line)
        # one line: the next line starts another command (or the list ends)
        nxt = listed[listed.index(line) + 1] if listed.index(line) + 1 < len(listed) else ""
        assert not nxt.strip() or nxt.split()[0] in top, (name, nxt)


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_every_option_and_argument_has_help(path: str, cmd) -> None:
    missing = [p.name for p in cmd.params if not (getattr(p, "help", None) or "").strip()]
    assert not missing, f"`vllmkit {path}`: no help for {missing}"
    assert (cmd.help or "").strip(), f"`vllmkit {path}` has no description"


@pytest.mark.parametrize(("shell", "written"), [("bash", ".bash_completions/vllmkit.sh"), ("zsh", ".zfunc/_vllmkit"),
                                                 ("fish", ".config/fish/completions/vllmkit.fish")])
def test_completion_installs_for_each_shell(tmp_path: Path, shell: str, written: str) -> None:
    """The real console script in a throwaway HOME, started from a parent process named like the shell
    (typer detects the shell from its parent's name; zsh and fish are not installed here, so a bash
    binary under that name stands in): `--install-completion` writes that shell's completion file."""
    home = tmp_path / "home"
    home.mkdir()
    fake_shell = tmp_path / shell
    fake_shell.symlink_to("/bin/bash")
    exe = Path(sys.executable).with_name("vllmkit")
    env = {**os.environ, "HOME": str(home)}
    proc = subprocess.run([str(fake_shell), "-c", f"{exe} --install-completion; :"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"{shell} completion installed" in proc.stdout + proc.stderr
    target = home / written
    assert target.exists(), sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    assert "_VLLMKIT_COMPLETE" in target.read_text()


def test_completion_answers_with_commands_and_options() -> None:
    """What the installed bash hook asks the program: the words so far -> the candidates."""
    exe = Path(sys.executable).with_name("vllmkit")
    base = {**os.environ, "_VLLMKIT_COMPLETE": "complete_bash"}
    out = subprocess.run([str(exe)], env={**base, "COMP_WORDS": "vllmkit pl", "COMP_CWORD": "1"},
                         capture_output=True, text=True, timeout=60).stdout.split()
    assert out == ["plan"]
    out = subprocess.run([str(exe)], env={**base, "COMP_WORDS": "vllmkit plan --kv-cache-d", "COMP_CWORD": "2"},
                         capture_output=True, text=True, timeout=60).stdout.split()
    assert out == ["--kv-cache-dtype"]
