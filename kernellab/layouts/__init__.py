"""kernellab.layouts."""
