"""The learner's Pallas kernels: refs and memory spaces, grids, DMAs and semaphores, a shadow interpreter."""
