"""Category schemes are rule files: a title, prose, and one definition line per category.

A definition line reads `- **name**: definition`; everything else in the file is commentary for
the reader (and the model). The same parser reads every scheme of the category audit: the paper's
five-category scheme (prompts/audit/schemes/full.md) and the falsification schemes beside it.
Checklist synthesis reads none of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_DEFINITION = re.compile(r"^- \*\*([A-Za-z][\w\-]*)\*\*:\s+(.+?)\s*$")


@dataclass(frozen=True)
class CategoryDef:
    name: str
    definition: str

    def as_input(self) -> dict[str, str]:
        return {"name": self.name, "definition": self.definition}


@dataclass(frozen=True)
class CategoryScheme:
    name: str
    path: Path
    categories: tuple[CategoryDef, ...]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.categories]

    def as_input(self) -> list[dict[str, str]]:
        return [c.as_input() for c in self.categories]


def parse_scheme(text: str, *, source: str = "<scheme>") -> tuple[CategoryDef, ...]:
    defs: list[CategoryDef] = []
    for line in text.splitlines():
        m = _DEFINITION.match(line)
        if m:
            defs.append(CategoryDef(m.group(1), m.group(2)))
    if not defs:
        raise ValueError(f"{source}: no category definitions (lines of the form '- **name**: definition')")
    names = [d.name for d in defs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"{source}: category defined more than once: {', '.join(dupes)}")
    if "none" in names:
        raise ValueError(f"{source}: 'none' is reserved for requirements no category covers")
    return tuple(defs)


def read_scheme(path: str | Path, *, name: str | None = None) -> CategoryScheme:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: category scheme not found")
    defs = parse_scheme(path.read_text(encoding="utf-8"), source=str(path))
    return CategoryScheme(name=name or path.stem, path=path, categories=defs)
