"""Grounded Checklist Partial Credit."""

try:  # conf/ uses gcpc's OmegaConf resolvers; any process that composes it after `import gcpc` has them
    from gcpc.experiment import register_resolvers as _register

    _register()
except ImportError:  # pragma: no cover - omegaconf is a dependency
    pass
