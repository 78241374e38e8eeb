"""kernellab.backends.nvidia."""
