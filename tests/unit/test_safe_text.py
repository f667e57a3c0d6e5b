"""Nothing from outside reaches the terminal as a control sequence (output.safe_text and the console
every command prints through). Property tests over arbitrary text, including every C0/C1 control,
ESC sequences (CSI clear screen, OSC title, OSC 8 hyperlinks), bidi overrides and lone surrogates."""

from __future__ import annotations

import io
import re

from hypothesis import example, given
from hypothesis import strategies as st
from rich.table import Table

from vllmkit import output
from vllmkit.output import safe_text

# what a terminal may act on: C0 except newline, DEL, C1, bidi controls, line/paragraph separators
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
SEQUENCES = ["\x1b[2J", "\x1b]0;pwned\x07", "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\", "\x9b31m",
             "\r", "\b", "\u202e", "\x00", "\ud800", "[/]", "[bold]", "[link=http://evil.example]"]
HOSTILE = st.lists(st.one_of(st.text(), st.sampled_from(SEQUENCES)), max_size=8).map("".join)


@given(HOSTILE)
def test_safe_text_leaves_no_control_character(text: str) -> None:
    assert not UNSAFE.search(safe_text(text).replace("\n", "")) and "\n" not in safe_text(text)
    assert not UNSAFE.search(safe_text(text, newlines=True).replace("\n", ""))


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp"))))
def test_printable_text_is_unchanged(text: str) -> None:
    assert safe_text(text) == text


def test_escapes_are_visible() -> None:
    assert safe_text("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert safe_text("x\u202ey") == "x\\u202ey"
    assert safe_text("l1\nl2") == "l1\\nl2" and safe_text("l1\r\nl2", newlines=True) == "l1\nl2"


@given(HOSTILE, HOSTILE)
@example(cell="[#ff]x[/]", line="[#]")  # markup that parses but is no style (found by hypothesis once)
def test_everything_the_console_renders_is_escaped(cell: str, line: str) -> None:
    """Tables and print() of outside text through output.console(): the bytes written hold no control
    character (no colour either: the stream is not a TTY)."""
    buf = io.StringIO()
    con = output.console()
    con.file = buf
    table = Table(title=line)
    table.add_column("c")
    table.add_row(cell)
    con.print(table)
    con.print(line, markup=False)
    assert not UNSAFE.search(buf.getvalue().replace("\n", ""))
