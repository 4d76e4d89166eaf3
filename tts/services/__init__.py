"""Business logic: the synthesis pipeline, history, cache, limits, jobs, model lifecycle."""
