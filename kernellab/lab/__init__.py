"""kernellab.lab."""
