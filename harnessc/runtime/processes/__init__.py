"""Child processes the agent starts: supervised so they die with it, with an environment stripped of credentials."""
