"""The annotation web app (Flask): one page per protocol step, answers saved on submit.

URLs carry the annotator's pseudonym and opaque study numbers only (log numbers are a seeded
shuffle), never trajectory ids, conditions, outcomes or scores; the study database does not hold
outcomes or scores at all. The checklist page of a task is refused until every assigned trajectory
of that task has its overall ratings (Q1, Q1b) and every assigned pair its comparison (Q2), the
paper's order; it is offered only for the task's Q3 subset.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask, abort, g, redirect, render_template, request, url_for

from gcpc.analysis.annotations import CRITERION_LABELS
from gcpc.annotate.study import ProtocolError, Study


def create_app(db_path: str | Path) -> Flask:
    db_path = Path(db_path)
    Study(db_path).close()  # fail at start, naming the file, when the study does not exist
    app = Flask(__name__, template_folder=str(Path(__file__).parent / "templates"))
    app.config["STUDY_DB"] = str(db_path)

    def study() -> Study:
        if "study" not in g:
            g.study = Study(app.config["STUDY_DB"])
        return g.study

    @app.teardown_appcontext
    def _close(_exc: BaseException | None) -> None:
        s = g.pop("study", None)
        if s is not None:
            s.close()

    def annotator_or_404(annotator: str) -> Study:
        s = study()
        if not s.has_annotator(annotator):
            abort(404, description=f"unknown annotator '{annotator}'")
        return s

    def page(template: str, **ctx: Any) -> str:
        return render_template(template, protocol=study().protocol, labels=CRITERION_LABELS, **ctx)

    @app.get("/")
    def home() -> str:
        s = study()
        return page("home.html", annotators=[(a, s.progress(a)) for a in s.annotators()],
                    description=s.meta("description", ""))

    @app.get("/a/<annotator>/")
    def next_step(annotator: str) -> Any:
        s = annotator_or_404(annotator)
        step = s.next_step(annotator)
        if step is None:
            return page("done.html", annotator=annotator, progress=s.progress(annotator))
        kind, n = step
        endpoint = {"rate": "rate", "items": "items", "pair": "pair"}[kind]
        return redirect(url_for(endpoint, annotator=annotator, n=n))

    def log_view(s: Study, log: int) -> dict[str, Any]:
        task = s.task(s.task_of(log))
        return {"task": task, "events": s.events(log)}

    @app.route("/a/<annotator>/rate/<int:n>", methods=["GET", "POST"])
    def rate(annotator: str, n: int) -> Any:
        s = annotator_or_404(annotator)
        if not s.is_assigned(annotator, n):
            abort(404, description="this trajectory is not assigned to you")
        error = None
        if request.method == "POST":
            try:
                ratings = {q: float(request.form[q]) for q in ("Q1", "Q1b") if request.form.get(q, "") != ""}
                s.save_ratings(annotator, n, ratings)
                return redirect(url_for("next_step", annotator=annotator))
            except (ProtocolError, ValueError) as exc:
                error = str(exc)
        elif s.rated(annotator, n):
            return redirect(url_for("next_step", annotator=annotator))
        pos, total = s.position(annotator, n)
        return page("rate.html", annotator=annotator, n=n, pos=pos, total=total, error=error,
                    asked=s.missing_ratings(annotator, n), **log_view(s, n)), (400 if error else 200)

    @app.route("/a/<annotator>/items/<int:n>", methods=["GET", "POST"])
    def items(annotator: str, n: int) -> Any:
        s = annotator_or_404(annotator)
        if not s.is_assigned(annotator, n):
            abort(404, description="this trajectory is not assigned to you")
        if not s.in_q3(n):
            abort(404, description="this trajectory is not in the Q3 subset")
        if not s.checklist_revealed(annotator, s.task_of(n)):
            abort(403, description="rate every trajectory of this task (Q1, Q1b) and compare its pairs (Q2) before its checklist is shown")
        error = None
        if request.method == "POST":
            try:
                s.save_labels(annotator, n, {k[len("item-"):]: v for k, v in request.form.items() if k.startswith("item-")})
                return redirect(url_for("next_step", annotator=annotator))
            except ProtocolError as exc:
                error = str(exc)
        elif s.labelled(annotator, n):
            return redirect(url_for("next_step", annotator=annotator))
        pos, total = s.position(annotator, n)
        view = log_view(s, n)
        return page("items.html", annotator=annotator, n=n, pos=pos, total=total, error=error,
                    items=s.missing_items(annotator, n), **view), (400 if error else 200)

    @app.route("/a/<annotator>/pair/<int:n>", methods=["GET", "POST"])
    def pair(annotator: str, n: int) -> Any:
        s = annotator_or_404(annotator)
        if not s.is_pair_assigned(annotator, n):
            abort(404, description="this pair is not assigned to you")
        p = s.pair(n)
        if not (s.rated(annotator, p["a"]) and s.rated(annotator, p["b"])):
            abort(403, description="rate both trajectories (Q1, Q1b) before comparing them")
        if not s.compared(annotator, n) and s.checklist_shown(annotator, p["task"]):
            abort(403, description="the checklist of this task was already shown to you: Q2 comes before it")
        error = None
        if request.method == "POST":
            try:
                s.save_preference(annotator, n, request.form.get("preferred", ""))
                return redirect(url_for("next_step", annotator=annotator))
            except ProtocolError as exc:
                error = str(exc)
        elif s.compared(annotator, n):
            return redirect(url_for("next_step", annotator=annotator))
        return page("pair.html", annotator=annotator, n=n, error=error, task=s.task(p["task"]),
                    a_events=s.events(p["a"]), b_events=s.events(p["b"])), (400 if error else 200)

    return app
