"""One module per suite; each exposes ``run(ctx) -> SuiteResult``."""
