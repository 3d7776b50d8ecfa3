"""Small infrastructure the runtime shares: lazy package exports, safe YAML, records, ``${VAR}`` references, the per-user data folder."""
