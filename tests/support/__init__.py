"""Helpers of the test suite: scenes, surfaces, reference laws, the history probe, statics, runs across
thread counts and the MPI job runner."""
