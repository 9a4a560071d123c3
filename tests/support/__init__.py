"""Helpers of the test suite: scenes, surfaces, reference laws, the history probe, statics and the MPI job runner."""
