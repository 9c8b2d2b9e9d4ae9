"""Internal helpers: errors, registry, hashing."""
