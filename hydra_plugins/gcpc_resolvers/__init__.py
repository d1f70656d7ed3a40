"""Hydra plugin module that DVC imports before composing params.yaml (`hydra.plugins_path`, the
repository root): registers the resolvers conf/ uses (gcpc.experiment), so arm-set derivation and
config checks run at composition time, and has DVC report a bad override or config as one line
(gcpc.errors.install_in_dvc) instead of "unexpected error"."""

from gcpc.errors import install_in_dvc
from gcpc.experiment import register_resolvers

register_resolvers()
install_in_dvc()
