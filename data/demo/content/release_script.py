import json
import os

SECTIONS = [("feat", "## Features"), ("fix", "## Bug Fixes"), ("docs", "## Documentation")]
SKIP = {"chore", "ci"}

groups = {prefix: [] for prefix, _ in SECTIONS}
skipped = 0
seen = set()

with open("/root/repo/commits.txt", encoding="utf-8") as f:
    for line in f:
        subject = line.strip()
        if not subject:
            continue
        prefix, sep, desc = subject.partition(": ")
        if prefix in SKIP:
            skipped += 1
            continue
        if not sep or prefix not in groups or subject in seen:
            continue
        seen.add(subject)
        groups[prefix].append(desc[:1].upper() + desc[1:])

lines = ["# Release 2.4.0", ""]
for prefix, title in SECTIONS:
    lines.append(title)
    lines += [f"- {d}" for d in groups[prefix]]
    lines.append("")

os.makedirs("/root/output", exist_ok=True)
with open("/root/output/RELEASE_NOTES.md", "w", encoding="utf-8") as f:
    f.write("\n".join(lines))

stats = {"features": len(groups["feat"]), "fixes": len(groups["fix"]), "docs": len(groups["docs"]), "skipped": skipped}
with open("/root/output/release_stats.json", "w") as f:
    json.dump(stats, f, indent=2)

print(json.dumps(stats))
