"""kernellab.backends."""
