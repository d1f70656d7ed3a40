"""Echo resistance (gcpc.corpus.authorship): the fast paths equal the plain forms, and the rules hold."""

import random
import shlex

import pytest

from gcpc.corpus.authorship import line_authorship, norm, norm_reference, shell_tokens


def _shlex(cmd: str) -> list[str]:
    lex = shlex.shlex(cmd, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    return list(lex)


def test_norm_equals_the_plain_form_on_random_lines():
    rng = random.Random(11)
    alphabet = list("ab1 2.)-+>*_`\t\n.,;:É٣²x ")
    for _ in range(50_000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        assert norm(line) == norm_reference(line), repr(line)


@pytest.mark.parametrize("line", ["- **Done**: `x_y`.", "12) Step one;", ">  quoted  text:", "٣. arabic digit", "plain"])
def test_norm_examples(line):
    assert norm(line) == norm_reference(line)


def test_shell_tokens_equal_shlex_on_random_commands():
    """Without quotes, escapes or comments the regex path runs; with them, shlex itself. Both must match shlex."""
    rng = random.Random(5)
    alphabet = list("ab-./~*?=();<>|& \t\r\n\x0bÉ€\u00a0x1$") + ["'", '"', "\\", "#"]
    for _ in range(10_000):
        cmd = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        try:
            expected = _shlex(cmd)
        except ValueError:
            with pytest.raises(ValueError):
                shell_tokens(cmd)
            continue
        assert shell_tokens(cmd) == expected, repr(cmd)


def _events(*pairs):
    return [{"index": i, "kind": kind, "text": text} for i, (kind, text) in enumerate(pairs)]


def test_echoed_and_read_back_lines():
    events = _events(
        ("tool_call", "Bash: echo 'all tests passed' && echo done"),
        ("tool_output", "all tests passed\ndone"),
        ("tool_call", "Bash: cat > notes.txt <<'EOF'\nresult table written\nEOF"),
        ("tool_output", ""),
        ("tool_call", "Bash: cat notes.txt; ls /app"),
        ("tool_output", "result table written\nmain.py"),
    )
    marks = line_authorship(events)
    assert marks[1] == {0: "echoed", 1: "echoed"}  # an echo-only command: its whole output is the agent's
    assert marks[5] == {0: "read back"}  # the file the agent wrote, displayed again; main.py is the environment's


def test_piped_echo_is_not_only_display():
    events = _events(("tool_call", "Bash: echo data | wc -c"), ("tool_output", "5"))
    assert line_authorship(events) == {}


def test_norm_lines_equals_norm_of_each_line():
    rng = random.Random(3)
    alphabet = list("aB1 2.)-+>*_`\t.,;:ÉİẞΣ٣²x ") + ["\n", "\r\n", "\r", "\x0b", "\x85", "\u2028"]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        from gcpc.corpus.authorship import norm_lines

        assert norm_lines(text) == [norm_reference(line) for line in text.splitlines()], repr(text)
