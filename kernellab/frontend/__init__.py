"""kernellab.frontend."""
