import csv
import json
import os

LENGTH = {"m": 1.0, "mm": 1e-3, "ft": 0.3048, "in": 0.0254}
FORCE = {"N": 1.0, "kN": 1e3, "lbf": 4.4482216152605, "kip": 4448.2216152605}
MODULUS = {"Pa": 1.0, "MPa": 1e6, "GPa": 1e9, "psi": 6894.757293168, "ksi": 6894757.293168}
INERTIA = {"m^4": 1.0, "cm^4": 1e-8, "mm^4": 1e-12, "in^4": 0.0254 ** 4}


def si(q, table):
    return q["value"] * table[q["unit"]]


with open("/root/input/beams.json") as f:
    beams = json.load(f)

results = []
for b in beams:
    L = si(b["length"], LENGTH)
    P = si(b["load"], FORCE)
    E = si(b["E"], MODULUS)
    I = si(b["I"], INERTIA)
    delta = P * L**3 / (48 * E * I)
    moment = P * L / 4
    results.append({
        "beam_id": b["beam_id"],
        "max_deflection_mm": round(delta * 1000, 3),
        "max_moment_kNm": round(moment / 1000, 3),
        "passes_limit": delta <= L / 360,
    })

os.makedirs("/root/output", exist_ok=True)
with open("/root/output/beam_results.json", "w") as f:
    json.dump(results, f, indent=2)

with open("/root/output/beam_results.csv", "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=["beam_id", "max_deflection_mm", "max_moment_kNm", "passes_limit"])
    writer.writeheader()
    writer.writerows(results)

print("checked", ", ".join(f"{r['beam_id']}={r['max_deflection_mm']}mm" for r in results))
