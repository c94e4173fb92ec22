"""Running one audit: the request, the runner, its events, running to the end, resume."""
