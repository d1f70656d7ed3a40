"""Grounded Checklist Partial Credit.

Nothing is imported here: every stage process imports `gcpc` first, and the OmegaConf resolvers conf/
needs (gcpc.experiment.register_resolvers, ~0.1-0.3 s of omegaconf import) are registered only where
conf/ is composed (gcpc.params.compose, hydra_plugins/gcpc_resolvers inside `dvc exp run`, tests).
"""
