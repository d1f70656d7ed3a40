"""Package-install and progress output: what it looks like, and collapsing long runs of it.

Installation output (apt, pip, uv, npm, conda, curl/wget progress) says almost nothing a judge can
use as evidence, yet it is most of some logs: Terminal-Bench 1 panes are largely the harness's own
agent installation. `INSTALL_LINE` is the one definition of such a line; the judge view
(`gcpc.judging.view`) drops harness setup output and collapses long runs inside other events to a
marked summary line, counting every line it removes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

INSTALL_LINE = re.compile(
    r"^\s*(?:"
    # apt / dpkg / debconf
    r"(?:Get|Hit|Ign|Err):\d+ \S+"
    r"|Reading package lists|Building dependency tree|Reading state information"
    r"|Selecting previously unselected package |Preparing to unpack |Unpacking \S+ |Setting up \S+ "
    r"|Processing triggers for |Fetched [\d.,]+ [kMG]?B in |Need to get [\d.,]+ |After this operation"
    r"|\d+ upgraded, \d+ newly installed|The following (?:NEW |additional )?packages will be"
    r"|\(Reading database \.\.\.|debconf: |update-alternatives: using "
    # pip
    r"|Collecting [A-Za-z0-9][\w.\[\],-]*[A-Za-z0-9\]](?:[<>=!~@]\S*)?(?: \(from [^)]*\))?\s*$"
    r"|Downloading (?:\S+ \(|https?://)|Requirement already satisfied|Installing collected packages"
    r"|Successfully (?:installed|built|uninstalled) |Building wheels? for |Created wheel for |Stored in directory"
    r"|Using cached \S|Preparing metadata |Attempting uninstall|Found existing installation|Uninstalling \S"
    r"|Getting requirements to build|Installing build dependencies|Obtaining \S"
    # uv / pipx / poetry / conda
    r"|(?:Resolved|Prepared|Installed|Uninstalled|Audited|Downloaded|Built) \d+ packages? in "
    r"|Creating virtual environment at|Package operations: |- Installing \S+ \("
    r"|Preparing transaction|Verifying transaction|Executing transaction|Solving environment"
    # npm / yarn
    r"|(?:added|removed|changed) \d+ packages?|up to date, audited|npm (?:WARN|notice|warn) "
    r"|\d+ packages? (?:are|is) looking for funding"
    # download meters (tqdm, curl)
    r"|\d{1,3}(?:\.\d)?%\s*\|"
    r"|% Total +% Received|\d+ +[\d.]+[kMG]? +\d+ +[\d.]+[kMG]? +\d+ +\d+ +[\d.]+[kMG]? +\d+ "
    r")"
    # uv's package list: exactly one space, then + or -
    r"|^ [+-] [\w.\[\]-]+==\S+$"
    # progress bars: a run of bar characters with a size, rate or percentage on the line
    r"|^(?=[^\n]*[\u2501\u2588-\u258f#=]{10})(?=[^\n]*(?:\d%|\d ?[kMG]i?B|it/s|eta ))"
)
"""A line of package-install or progress output (the "noise regex"; match it at a line's start)."""
_ANY_LINE = re.compile(INSTALL_LINE.pattern, re.MULTILINE)

COLLAPSE_MARKER = "[... {n} package-install/progress lines collapsed ...]"


def is_install_line(line: str) -> bool:
    return bool(INSTALL_LINE.match(line))


def count_install_lines(text: str) -> int:
    return sum(1 for ln in text.split("\n") if INSTALL_LINE.match(ln))


@dataclass(frozen=True)
class Collapsed:
    text: str
    lines: int  # install/progress lines removed
    runs: int  # runs collapsed (one summary line each)


def collapse_install_runs(text: str, min_lines: int) -> Collapsed:
    """Replace every run of at least `min_lines` consecutive install/progress lines by one marked
    summary line and the run's last line (often its outcome, e.g. 'Successfully installed numpy-2.0').
    Shorter runs stay: a single 'Successfully installed' line can be evidence."""
    if min_lines <= 0 or not _ANY_LINE.search(text):
        return Collapsed(text, 0, 0)
    lines = text.split("\n")
    out: list[str] = []
    removed = runs = 0
    i, n = 0, len(lines)
    while i < n:
        if not INSTALL_LINE.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        j = i
        while j < n and INSTALL_LINE.match(lines[j]):
            j += 1
        if j - i >= min_lines:
            out.append(COLLAPSE_MARKER.format(n=j - i - 1))
            out.append(lines[j - 1])
            removed += j - i - 1
            runs += 1
        else:
            out.extend(lines[i:j])
        i = j
    return Collapsed("\n".join(out), removed, runs)
