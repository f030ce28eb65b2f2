from ace_core.evaluation.bench import bench_env


def test_quick_bench_reports_every_figure():
    figures = bench_env("l2rpn_case14_sandbox", quick=True)
    for key in (
        "env_step_ms",
        "act_path_ms",
        "act_path_over_step",
        "train_steps_per_s",
        "train_over_raw",
    ):
        assert figures[key] > 0, key
    assert figures["train_updates"] == figures["train_decisions"]  # learning on at every decision
    assert figures["actions"] == 199 and figures["head"] == "flat"
