"""Action subsets from a teacher's most frequent topologies."""


def test_a_teacher_subset_restricts_training_and_the_saved_policy(tmp_path):
    from ace_core.agents.loading import load_agent
    from ace_core.config import TrainConfig
    from ace_core.events import MemorySink
    from ace_core.grid.envs import make_env
    from ace_core.imitation.subset import frequent_topologies, save_subset
    from ace_core.training.trainer import Trainer

    # on this grid doing nothing fails early, so the greedy teacher has to act
    pairs = frequent_topologies("rte_case14_realistic", "greedy:8", episodes=3, top=5)
    assert pairs and all(count > 0 for _, count in pairs)
    path = save_subset(pairs, tmp_path / "subset.txt")
    config = TrainConfig(
        env="rte_case14_realistic",
        steps=50,
        learning_starts=16,
        batch_size=16,
        hidden=16,
        rho_threshold=0.5,
        action_subset=str(path),
    )
    trainer = Trainer(config, tmp_path / "run", MemorySink())
    assert trainer.space.n == 1 + 20 + len(pairs)
    trainer.run()
    agent = load_agent(f"sac:{tmp_path / 'run'}", make_env("rte_case14_realistic"))
    assert agent.space.n == trainer.space.n
