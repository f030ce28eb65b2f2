"""Training runs: launch, watch live, cancel, resume, evaluate, deploy a checkpoint."""
