import json
import os

import pandas as pd

df = pd.read_csv("/root/data/orders.csv", parse_dates=["order_date"])
df = df[df["status"] == "completed"]
df["revenue"] = df["quantity"] * df["unit_price"]

by_month = df.groupby(df["order_date"].dt.strftime("%Y-%m"))["revenue"].sum().round(2)
by_region = df.groupby("region")["revenue"].agg(["sum", "count"]).sort_values("sum", ascending=False)

summary = {
    "total_revenue": round(float(df["revenue"].sum()), 2),
    "order_count": int(len(df)),
    "top_region": by_region.index[0],
    "revenue_by_month": {k: float(v) for k, v in by_month.items()},
}

os.makedirs("/root/output", exist_ok=True)
with open("/root/output/sales_summary.json", "w") as f:
    json.dump(summary, f, indent=2)
by_region.rename(columns={"sum": "revenue", "count": "orders"}).to_csv("/root/output/region_revenue.csv")
print(summary)
