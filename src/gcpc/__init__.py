"""Grounded Checklist Partial Credit.

Nothing is imported here but gcpc.errors (no imports of its own): every stage process imports `gcpc` first, and the OmegaConf resolvers conf/
needs (gcpc.experiment.register_resolvers, ~0.1-0.3 s of omegaconf import) are registered only where
conf/ is composed (gcpc.experiment.compose, hydra_plugins/gcpc_resolvers inside `dvc exp run`, tests).
"""

import sys as _sys

from gcpc.errors import install as _install, is_gcpc_entry_point as _is_entry_point

if _is_entry_point(getattr(_sys, "orig_argv", [])):
    _install()  # a user error prints one line and exits 2 (gcpc.errors); imports nothing else
