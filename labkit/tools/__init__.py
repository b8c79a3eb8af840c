"""Tools a learner runs to check a setup: `labkit doctor` (`doctor`)."""
