"""The DAG schedulers' work per decision is bounded by a count (never by a timer): placements
tried and configurations priced stay within ``dag_work_bound`` at every decision of every
published scheduler, on 2 and 9 servers (measured: 28-100% of the bound at the worst
decision)."""

from __future__ import annotations

import pytest

from edgegym.baselines import dag, make_policy
from edgegym.baselines.dag import dag_work_bound
from edgegym.families.dag import DAGOffloadEnv
from edgegym.families.dag.cluster import EdgeCluster

PUBLISHED = ["mrs", "srs", "mrs:always=false,chain=false", "pass", "ekya-dag", "adainf"]


@pytest.mark.parametrize("servers", [2, 9])
@pytest.mark.parametrize("policy", PUBLISHED)
def test_every_decision_stays_within_the_bound(policy, servers, monkeypatch):
    counts = {"tried": 0, "priced": 0}
    finish_on, option_for = EdgeCluster.finish_on, dag.option_for

    def tried(self, *args):
        counts["tried"] += 1
        return finish_on(self, *args)

    def priced(*args):
        counts["priced"] += 1
        return option_for(*args)

    env = DAGOffloadEnv("srs-edge-5apps", requests=40, count=servers)
    pol = make_policy(policy, env)
    obs, _ = env.reset(seed=1)
    pol.reset(1)
    worst, decisions, done = 0.0, 0, False
    while not done:
        snap = env.unwrapped.sim_state()
        n_conf = max(len(row) for row in snap.options)
        bound = dag_work_bound(snap.app.n, snap.cluster.n, n_conf)
        counts.update(tried=0, priced=0)
        with monkeypatch.context() as m:  # count the policy's work only, not the env's
            m.setattr(EdgeCluster, "finish_on", tried)
            m.setattr(dag, "option_for", priced)
            action, _ = pol.predict(obs)
        work = counts["tried"] + counts["priced"]
        assert work <= bound, f"{policy}: {counts} at a {snap.kind} epoch, bound {bound}"
        worst = max(worst, work / bound)
        decisions += 1
        obs, _, term, trunc, _ = env.step(action)
        done = term or trunc
    assert decisions > 40 and worst > 0.1  # the count saw the work (not a bound never reached)


def test_the_bound_grows_with_tasks_servers_and_configurations():
    assert dag_work_bound(4, 5, 3) == 4 * 4 * 6 + 2 * 4 * 3
    assert dag_work_bound(8, 5, 3) == 2 * dag_work_bound(4, 5, 3)
    assert dag_work_bound(4, 10, 3) > dag_work_bound(4, 5, 3)
