"""The evaluation figure says who wins and why: policies ranked by the family's score with 95%
confidence intervals on an axis spanning the data, the published scheduler marked, and time
panels for the published scheduler and the best policy, in every family (read back from the
drawn figure, not only from the plan)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from scipy.stats import t as student_t

from edgegym.core.registry import family_of_id
from edgegym.evaluation import evaluate
from edgegym.plotting import ROLE_COLORS, draw_evaluation, figure_plan

CASES = {
    "continual": ("edgegym/ContinualLearning-v0", "ekya-cityscapes",
                  {"windows": 2, "streams": 4}, ["no-retrain", "thief", "random"], "shares"),
    "mig": ("edgegym/MIGReconfig-v0", "migrator-w5", {"window_s": 20, "windows": 2},
            ["static-half", "migrator", "random"], "shares"),
    "energy": ("edgegym/EnergyFairShare-v0", "etf-dynamic-3", {},
               ["tf", "etf", "random"], "energy"),
    "dag": ("edgegym/DAGOffload-v0", "srs-edge-5apps", {"requests": 30},
            ["list", "mrs", "random"], "dag"),
}  # fmt: skip


@pytest.fixture(scope="module", params=list(CASES))
def evaluated(request):
    env_id, scenario, overrides, policies, kind = CASES[request.param]
    result = evaluate(env_id, policies, scenario=scenario, episodes=3, overrides=overrides,
                      timeline=True, progress=False)  # fmt: skip
    assert result.ok, result.errors
    return env_id, result, kind


def test_policies_are_ranked_by_the_family_score_with_95_percent_intervals(evaluated):
    env_id, result, _ = evaluated
    metric, _, higher = family_of_id(env_id).score
    plan = figure_plan(result)
    means = [plan.mean[n] for n in plan.order]
    assert means == sorted(means, reverse=higher)
    assert plan.best == plan.order[0]
    for r in result.results:
        vals = [ep["metrics"][metric] for ep in r["per_episode"]]
        assert plan.mean[r["policy"]] == pytest.approx(np.mean(vals))
        half = student_t.ppf(0.975, len(vals) - 1) * np.std(vals, ddof=1) / np.sqrt(len(vals))
        assert plan.ci[r["policy"]] == pytest.approx(half)


def test_the_figure_marks_the_published_scheduler_and_panels_it_and_the_best(evaluated):
    env_id, result, kind = evaluated
    published = family_of_id(env_id).default_policy
    fig, plan = draw_evaluation(result, timeline=["random"])
    try:
        assert plan.published == published and plan.kind == kind
        expected = [published, plan.best]
        if plan.best == published:
            expected[1] = plan.runner_up
        assert plan.panels == [*dict.fromkeys([*expected, "random"])]
        summary = fig.axes[0]
        labels = [t.get_text().replace("  (published)", "") for t in summary.get_yticklabels()]
        assert labels == plan.order  # best at the top, as ranked
        lo, hi = summary.get_xlim()  # the axis spans the data, not 0..1
        extent = [plan.mean[n] + s * plan.ci[n] for n in plan.order for s in (-1, 1)]
        assert lo <= min(extent) and hi >= max(extent)
        assert hi - lo < 1.6 * (max(extent) - min(extent)) + 0.05
        top = summary.get_yticklabels()[labels.index(published)]
        assert top.get_color() == ROLE_COLORS["published"] and top.get_fontweight() == "bold"
        titles = [ax.get_title() for ax in fig.axes[1:] if ax.get_title()]
        assert [t.split(" ")[0] for t in titles[::2]] == plan.panels  # left panel per policy
        assert len(titles) == 2 * len(plan.panels)
    finally:
        plt.close(fig)


def test_a_timeline_policy_that_was_not_evaluated_is_refused(evaluated):
    _, result, _ = evaluated
    with pytest.raises(ValueError, match="--timeline nope: not an evaluated policy"):
        figure_plan(result, timeline=["nope"])


def test_a_figure_where_every_policy_failed_says_so(tmp_path):
    from edgegym.evaluation import EvalResult
    from edgegym.plotting import plot_evaluation

    result = EvalResult("edgegym/EnergyFairShare-v0", None, {}, [0, 1],
                        results=[{"policy": "etf", "error": "RuntimeError: boom"}])  # fmt: skip
    fig, plan = draw_evaluation(result)
    try:
        assert plan.order == ["etf"] and plan.best is None and plan.panels == []
        assert "no policy has a value" in fig.axes[0].texts[0].get_text()
    finally:
        plt.close(fig)
    assert plot_evaluation(result, tmp_path / "f.png").stat().st_size > 0
