"""kernellab.runtime."""
