"""The machinery that runs plugins: Registry, Framework (one per profile), waiting pods."""
