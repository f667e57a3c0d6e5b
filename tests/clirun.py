"""Run the vllmkit CLI in-process exactly as the console script does (the boundary in `run` included:
usage errors, domain errors, interrupts), with typer's test isolation of stdin/stdout/stderr/env."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from typer.testing import CliRunner, Result

from vllmkit.cli.app import run


def invoke(args: Sequence[str], env: Mapping[str, str | None] | None = None, input: str | None = None) -> Result:
    runner = CliRunner()
    exception: BaseException | None = None
    with runner.isolation(input=input, env=env) as streams:
        try:
            code = run(list(args))
        except SystemExit as exc:  # a command that exits on its own
            code = int(exc.code or 0)
        except Exception as exc:  # only with VLLMKIT_DEBUG=1 (run re-raises then)
            exception, code = exc, 1
        stdout, stderr, output = (s.getvalue() for s in streams)
    return Result(runner=runner, stdout_bytes=stdout, stderr_bytes=stderr, output_bytes=output,
                  return_value=None, exit_code=code, exception=exception, exc_info=None)
