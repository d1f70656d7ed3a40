"""Hydra plugin module that DVC imports before composing params.yaml (`hydra.plugins_path`, the
repository root): registers the resolvers conf/ uses (gcpc.experiment), so arm-set derivation and
config checks run at composition time."""

from gcpc.experiment import register_resolvers

register_resolvers()
