import csv
import json
import os

import yaml

with open("/root/data/inventory.yaml", encoding="utf-8") as f:
    data = yaml.safe_load(f)


def parse_price(text):
    return round(float(str(text).replace("$", "").replace(",", "")), 2)


rows = []
for wh in data["warehouses"]:
    for item in wh["items"]:
        qty = int(item.get("quantity") or 0)
        price = parse_price(item["unit_price"])
        rows.append({
            "sku": item["sku"],
            "name": item["name"],
            "warehouse": wh["code"],
            "quantity": qty,
            "unit_price": f"{price:.2f}",
            "total_value": f"{qty * price:.2f}",
        })
rows.sort(key=lambda r: r["sku"])

os.makedirs("/root/output", exist_ok=True)
with open("/root/output/inventory.csv", "w", newline="", encoding="utf-8") as f:
    writer = csv.DictWriter(f, fieldnames=["sku", "name", "warehouse", "quantity", "unit_price", "total_value"])
    writer.writeheader()
    writer.writerows(rows)

summary = {
    "item_count": len(rows),
    "warehouse_count": len(data["warehouses"]),
    "grand_total": round(sum(float(r["total_value"]) for r in rows), 2),
}
with open("/root/output/inventory_summary.json", "w") as f:
    json.dump(summary, f, indent=2)

print(f"wrote {len(rows)} rows")
