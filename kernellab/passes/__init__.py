"""kernellab.passes."""
