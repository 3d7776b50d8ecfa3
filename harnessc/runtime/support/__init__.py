"""Small infrastructure the runtime shares: blocking calls off the event loop, lazy package exports, safe YAML."""
