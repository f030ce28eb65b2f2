"""Review of the LLM's work: refinements to approve or reject, reward shapings to read."""
