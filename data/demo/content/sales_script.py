import csv
import json
import os
from collections import defaultdict

INPUT = "/root/data/orders.csv"
OUT_DIR = "/root/output"

by_month = defaultdict(float)
by_region = defaultdict(float)
region_orders = defaultdict(int)
count = 0

with open(INPUT, newline="") as f:
    for row in csv.DictReader(f):
        if row["status"] != "completed":
            continue
        revenue = int(row["quantity"]) * float(row["unit_price"])
        by_month[row["order_date"][:7]] += revenue
        by_region[row["region"]] += revenue
        region_orders[row["region"]] += 1
        count += 1

summary = {
    "total_revenue": round(sum(by_month.values()), 2),
    "order_count": count,
    "top_region": max(by_region, key=by_region.get),
    "revenue_by_month": {m: round(v, 2) for m, v in sorted(by_month.items())},
}

os.makedirs(OUT_DIR, exist_ok=True)
with open(f"{OUT_DIR}/sales_summary.json", "w") as f:
    json.dump(summary, f, indent=2)

with open(f"{OUT_DIR}/region_revenue.csv", "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["region", "revenue", "orders"])
    for region, revenue in sorted(by_region.items(), key=lambda kv: kv[1], reverse=True):
        writer.writerow([region, f"{revenue:.2f}", region_orders[region]])

print(f"{count} completed orders, total_revenue={summary['total_revenue']}, top_region={summary['top_region']}")
print(f"regions written: {len(by_region)}")
