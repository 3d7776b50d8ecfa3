"""The vocabulary of a run: messages, events, hook moments, options, the budget, the loop's states and the catalog of what a spec can name."""
