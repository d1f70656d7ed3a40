import json
import os
import re
from collections import Counter

LOG = "/root/logs/access.log"
OUT_DIR = "/root/output"
LINE_RE = re.compile(
    r'^(?P<ip>\S+) \S+ \S+ \[(?P<ts>[^\]]+)\] "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+" '
    r'(?P<status>\d{3}) (?P<size>\d+|-) "[^"]*" "[^"]*"$'
)

total = 0
malformed = 0
status_counts = Counter()
error_paths = Counter()
denied = Counter()

with open(LOG, encoding="utf-8", errors="replace") as f:
    for line in f:
        m = LINE_RE.match(line.rstrip("\n"))
        if not m:
            malformed += 1
            continue
        total += 1
        status = int(m["status"])
        status_counts[str(status)] += 1
        if status >= 500:
            error_paths[m["path"].split("?", 1)[0]] += 1
        if status in (401, 403):
            denied[m["ip"]] += 1

report = {
    "total_requests": total,
    "malformed_lines": malformed,
    "status_counts": dict(sorted(status_counts.items())),
    "error_rate": round(sum(error_paths.values()) / total, 4),
    "top_error_paths": [p for p, _ in error_paths.most_common(3)],
}

os.makedirs(OUT_DIR, exist_ok=True)
with open(f"{OUT_DIR}/error_report.json", "w") as f:
    json.dump(report, f, indent=2)

suspicious = sorted(ip for ip, n in denied.items() if n > 10)
with open(f"{OUT_DIR}/suspicious_ips.txt", "w") as f:
    f.write("\n".join(suspicious) + "\n")

print(f"parsed {total} requests ({malformed} malformed), error_rate={report['error_rate']}")
print("suspicious:", suspicious)
