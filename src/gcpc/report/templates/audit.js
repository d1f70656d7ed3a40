/* GCPC audit viewer. Reads the page's embedded data (#audit-data: JSON on the index, gzipped JSON in
   base64 on trajectory pages, inflated with the browser's DecompressionStream) and renders it; text goes
   in through textContent only, never innerHTML. Log events are filled in lazily as they near the
   viewport, so large logs open at once. */
"use strict";

let DATA = null;

async function loadData() {
  const node = document.getElementById("audit-data");
  if (node.type !== "application/gzip+base64") return JSON.parse(node.textContent);
  const bytes = Uint8Array.from(atob(node.textContent.trim()), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function fmt(x, digits = 3) {
  if (x === null || x === undefined) return "—";
  if (typeof x === "boolean") return x ? "yes" : "no";
  if (typeof x === "number") return Number.isInteger(x) ? String(x) : x.toFixed(digits);
  return String(x);
}

function badge(label) {
  return el("span", { class: "badge b-" + String(label || "none").toLowerCase() }, label || "—");
}

function table(headers, rows, cls) {
  return el("table", { class: cls || "" },
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c))))));
}

/* ------------------------------------------------------------------ index page */

function indexPage() {
  const rows = DATA.rows;
  const fArm = document.getElementById("f-arm");
  for (const a of DATA.arms) fArm.append(el("option", { value: a, selected: a === DATA.primary_arm }, a));
  const fTask = document.getElementById("f-task");
  for (const t of DATA.tasks) fTask.append(el("option", { value: t }, t));
  const fOut = document.getElementById("f-outcome");
  for (const o of DATA.outcomes) fOut.append(el("option", { value: o }, o));
  const ids = ["f-task", "f-arm", "f-outcome", "f-min", "f-max", "f-zero", "f-down", "f-text"];
  const params = new URLSearchParams(location.hash.slice(1));
  for (const id of ids) {
    const node = document.getElementById(id);
    if (params.has(id)) node.value = params.get(id);
    node.addEventListener("input", render);
  }
  const tbody = document.querySelector("#index tbody");
  function val(id) { return document.getElementById(id).value; }
  function render() {
    const arm = val("f-arm"), task = val("f-task"), outcome = val("f-outcome"), zero = val("f-zero"), down = val("f-down");
    const lo = val("f-min") === "" ? null : Number(val("f-min")), hi = val("f-max") === "" ? null : Number(val("f-max"));
    const text = val("f-text").trim().toLowerCase();
    const state = new URLSearchParams();
    for (const id of ids) if (val(id) !== "") state.set(id, val(id));
    history.replaceState(null, "", "#" + state.toString());
    tbody.replaceChildren();
    let n = 0;
    for (const r of rows) {
      const a = r.arms[arm] || {};
      if (task && r.task_id !== task) continue;
      if (outcome && r.outcome !== outcome) continue;
      if (zero && (a.zero_evidence ? "yes" : "no") !== zero) continue;
      if (down && ((a.n_downgraded || 0) > 0 ? "yes" : "no") !== down) continue;
      if (lo !== null && !(a.gcpc_plain !== null && a.gcpc_plain !== undefined && a.gcpc_plain >= lo - 1e-12)) continue;
      if (hi !== null && !(a.gcpc_plain !== null && a.gcpc_plain !== undefined && a.gcpc_plain <= hi + 1e-12)) continue;
      if (text && !r.id.toLowerCase().includes(text)) continue;
      n++;
      tbody.append(el("tr", { "data-id": r.id, "data-outcome": r.outcome },
        el("td", {}, el("a", { href: r.page }, r.id)), el("td", {}, r.task_id), el("td", {}, r.condition),
        el("td", { class: "o-" + r.outcome.toLowerCase() }, r.outcome), el("td", { class: "num" }, fmt(a.gcpc_plain)),
        el("td", { class: "num" }, fmt(a.gcpc_outcome)), el("td", {}, fmt(a.zero_evidence)),
        el("td", { class: "num" }, fmt(a.n_downgraded)), el("td", {}, a.status || "missing"),
        el("td", { class: "num" }, r.n_events)));
    }
    document.getElementById("count").textContent = `${n} of ${rows.length} trajectories shown (arm ${arm})`;
  }
  render();
}

/* ------------------------------------------------------------------ trajectory page */

const EVENTS = new Map();

function segments(text, marks) {
  /* text split at every mark boundary; each piece carries the refs that cover it */
  if (!marks.length) return [text];
  const cuts = new Set([0, text.length]);
  for (const [s, e] of marks) { cuts.add(s); cuts.add(e); }
  const pts = [...cuts].sort((a, b) => a - b);
  const out = [];
  for (let k = 0; k + 1 < pts.length; k++) {
    const s = pts[k], e = pts[k + 1];
    const refs = marks.filter((m) => m[0] <= s && m[1] >= e).map((m) => m[2]);
    const piece = text.slice(s, e);
    out.push(refs.length ? el("mark", { "data-refs": refs.join(" "), title: "cited by " + refs.join(", ") }, piece) : piece);
  }
  return out;
}

function fillEvent(node, full) {
  const ev = EVENTS.get(Number(node.dataset.index));
  const pre = node.querySelector("pre");
  const showFull = full === undefined ? node.dataset.full === "1" : full;
  pre.replaceChildren(...segments(showFull ? ev.full : ev.text, showFull ? ev.full_marks : ev.marks));
  node.dataset.filled = "1";
  node.dataset.full = showFull ? "1" : "0";
  node.style.minHeight = "";
}

function logView() {
  const log = document.getElementById("log");
  const observer = new IntersectionObserver((entries) => {
    for (const e of entries) if (e.isIntersecting && e.target.dataset.filled !== "1") { fillEvent(e.target); observer.unobserve(e.target); }
  }, { rootMargin: "1200px 0px" });
  const frag = document.createDocumentFragment();
  for (const ev of DATA.events) {
    EVENTS.set(ev.i, ev);
    const lines = Math.min((ev.text.match(/\n/g) || []).length + 1, 400);
    const node = el("div", { class: "ev k-" + ev.kind + (ev.evidence_kind ? " evidence-kind" : ""), id: "ev-" + ev.i,
                             "data-index": ev.i, "data-filled": "0" },
      el("div", { class: "ev-head" }, ev.head,
        ev.full ? el("button", { class: "toggle-full", type: "button", onclick: () => fillEvent(node, node.dataset.full !== "1") },
                     `show full / judge view (${ev.full.length} chars)`) : null),
      el("pre", {}));
    node.style.minHeight = (lines * 1.35 + 2) + "em";
    frag.append(node);
    observer.observe(node);
  }
  log.append(frag);
}

function scrollLogTo(target) {
  /* scroll the log pane only (the checklist stays where it is); whole page when the pane does not scroll */
  const box = document.getElementById("log-section");
  if (box && getComputedStyle(box).overflowY === "auto" && box.scrollHeight > box.clientHeight) {
    box.scrollTop += target.getBoundingClientRect().top - box.getBoundingClientRect().top - box.clientHeight / 3;
  } else target.scrollIntoView({ block: "center" });
}

function jump(evidence) {
  const node = document.getElementById("ev-" + evidence.event_index);
  if (!node) return;
  const inFullOnly = evidence.found === "in the cut part of the event";
  fillEvent(node, inFullOnly || node.dataset.full === "1");
  document.querySelectorAll("mark.active, .ev.target").forEach((m) => m.classList.remove("active", "target"));
  node.classList.add("target");
  let first = null;
  for (const m of node.querySelectorAll("mark")) {
    if ((m.dataset.refs || "").split(" ").includes(evidence.ref)) { m.classList.add("active"); first = first || m; }
  }
  const target = first || node;
  scrollLogTo(target);
  requestAnimationFrame(() => setTimeout(() => scrollLogTo(target), 60));
  history.replaceState(null, "", "#ev-" + evidence.event_index);
}

function evidenceList(lab) {
  if (!lab.evidence.length) return el("span", { class: "muted" }, "no evidence cited");
  return el("ul", { class: "evidence" }, lab.evidence.map((ev) => el("li", {},
    el("button", { type: "button", class: "cite", "data-ref": ev.ref, onclick: () => jump(ev) }, `[${ev.event_index}]`),
    " ", el("q", {}, ev.quote),
    ev.found === "shown" ? null : el("span", { class: "warn" }, ` (${ev.found})`))));
}

function verdictCell(lab) {
  if (!lab) return el("span", { class: "muted" }, "not judged");
  return el("div", { class: "verdict", "data-item": lab.item_id },
    badge(lab.label),
    lab.downgraded ? el("div", { class: "downgrade" }, "evidence gate: ", badge(lab.raw_label), " → ", badge(lab.label),
                        " — ", lab.downgrade_reason) : null,
    lab.label_outcome && lab.label_outcome !== lab.label ? el("div", { class: "after-outcome" }, "after official-outcome step: ", badge(lab.label_outcome)) : null,
    el("div", { class: "reason" }, lab.reason || ""),
    evidenceList(lab));
}

function trajectoryPage() {
  const t = DATA.trajectory, o = DATA.outcome;
  document.getElementById("meta").append(el("h2", {}, "Trajectory"),
    table(["field", "value"], [["trajectory id", t.trajectory_id], ["benchmark", t.benchmark], ["task", t.task_id],
      ["harness", t.harness], ["model", t.model], ["condition", t.condition], ["source", t.source], ["trial", t.trial],
      ["source path", t.source_path], ["log format", fmt(t.log_format)], ["log files", t.log_files.join(", ") || "—"],
      ["events", t.n_events], ["reader notes", t.notes.join("; ") || "—"]], "kv"),
    DATA.instruction !== null ? el("details", {}, el("summary", {}, "Task instruction"), el("pre", { class: "instruction" }, DATA.instruction)) : null);

  const tests = Object.entries(o.test_results);
  document.getElementById("outcome").append(el("h2", {}, "Official outcome (never shown to any judge)"),
    table(["field", "value"], [["status", el("span", { class: "o-" + o.status.toLowerCase(), id: "official-status" }, o.status)],
      ["reward", fmt(o.reward)], ["as recorded", fmt(o.raw)], ["reason", fmt(o.reason)]], "kv"),
    el("h3", {}, `Per-test results (${tests.length})`),
    tests.length ? table(["verifier test", "result"], tests.map(([k, v]) => [k, el("span", { class: "t-" + v }, v)])) : el("p", { class: "muted" }, "none recorded"));

  const cl = DATA.checklist;
  const prov = document.getElementById("provenance");
  prov.append(el("h2", {}, "Provenance"));
  if (cl) prov.append(el("h3", {}, "Checklist (synthesis)"), table(["field", "value"], [["status", cl.status],
    ["checklist hash", cl.checklist_hash], ["provider", cl.provenance.provider], ["model", cl.provenance.model],
    ["prompt hash", cl.provenance.prompt_hash], ["rules hash", cl.provenance.rules_hash],
    ["request key", cl.provenance.request_key || "—"], ["attempts", cl.attempts], ["failure", fmt(cl.failure)]], "kv"));
  prov.append(el("h3", {}, "Judges"), table(["arm", "kind", "status", "provider", "model", "evidence gate", "prompt hash", "request key"],
    DATA.arms.map((a) => [a.arm + (a.primary ? " (primary)" : ""), fmt(a.kind), a.status + (a.error ? `: ${a.error}` : ""),
      fmt(a.provider), fmt(a.model), fmt(a.evidence_gate), el("code", {}, fmt(a.prompt_hash)), el("code", {}, fmt(a.request_key))])));

  document.getElementById("scores").append(el("h2", {}, "Scores"), table(
    ["arm", "GCPC (plain)", "GCPC (with outcome)", "Perfect", "evidence coverage", "zero-evidence", "Yes / No / Abstain", "downgraded", "holistic 0-10"],
    DATA.arms.map((a) => { const m = a.metrics || {}; return [a.arm, fmt(m.gcpc_plain), fmt(m.gcpc_outcome), fmt(m.perfect),
      fmt(m.evidence_coverage), fmt(m.zero_evidence), m.n_items === undefined ? "—" : `${m.n_yes} / ${m.n_no} / ${m.n_abstain}`,
      fmt(m.n_downgraded), fmt(m.holistic_score)]; })));

  const clArms = DATA.arms.filter((a) => a.kind === "checklist" && a.status === "ok");
  const sec = document.getElementById("checklist");
  sec.append(el("h2", {}, "Frozen checklist and every arm's verdict"));
  if (!cl) sec.append(el("p", { class: "muted" }, "no checklist for this task"));
  else {
    const rows = cl.items.map((it) => {
      const cells = [el("div", { class: "item" }, el("b", {}, it.item_id), " ", it.text,
        el("div", { class: "quote" }, "instruction: ", el("q", {}, it.quote)),
        el("div", { class: "route" }, "route: ", it.route, it.test_refs.length ? " — tests: " + it.test_refs.join(", ") : ""))];
      for (const a of clArms) cells.push(verdictCell(a.labels.find((l) => l.item_id === it.item_id)));
      return cells;
    });
    sec.append(table(["item", ...clArms.map((a) => a.arm)], rows, "verdicts"));
    const ends = clArms.filter((a) => a.endpoint);
    if (ends.length) sec.append(el("p", { class: "note" }, "Endpoint item added by the official-outcome step: ",
      ends.map((a) => `${a.arm}: ${a.endpoint.label_outcome}`).join("; ")));
  }
  const other = document.getElementById("other-arms");
  for (const a of DATA.arms.filter((x) => !clArms.includes(x))) {
    other.append(el("h2", {}, `Arm ${a.arm} (${fmt(a.kind)})`));
    if (a.status !== "ok") { other.append(el("p", { class: "muted" }, `${a.status}: ${a.error || ""}`)); continue; }
    if (a.kind === "holistic") other.append(el("p", {}, `score ${fmt(a.score)} / 10 — `, a.rationale || ""));
    else if (a.kind === "floor") {  // no model, no questions: the feature it reads and the value behind its score
      other.append(el("p", {}, `feature ${String(a.model || "").replace(/^floor:/, "")}: score ${fmt(a.score)} — `, a.rationale || ""));
      other.append(table(["feature of the judge-visible log", "value"],
        Object.keys(a.floor || {}).sort().map((k) => [k, Array.isArray(a.floor[k]) ? a.floor[k].join(", ") : fmt(a.floor[k])]), "floor"));
    } else {
      // TICK: the generator's analysis of the instruction, written before its questions (one per task)
      if (a.analysis) other.append(el("p", { class: "analysis" }, el("b", {}, "Analysis (before the questions): "), a.analysis));
      other.append(table(["question", "verdict"], a.labels.map((l) => [el("div", {}, el("b", {}, l.item_id), " ", l.text || ""), verdictCell(l)]), "verdicts"));
    }
  }
  logView();
  const m = /^#ev-(\d+)$/.exec(location.hash);
  if (m) { const node = document.getElementById("ev-" + m[1]); if (node) { fillEvent(node); node.scrollIntoView(); } }
}

loadData().then((data) => {
  DATA = data;
  if (document.body.dataset.page === "index") indexPage(); else trajectoryPage();
}, (err) => {
  document.body.prepend(el("p", { class: "error" }, "This page's data could not be read (" + err + "); "
    + "it needs a browser with DecompressionStream (Chrome 80, Firefox 113, Safari 16.4 or newer)."));
});
