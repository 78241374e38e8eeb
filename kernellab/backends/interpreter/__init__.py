"""kernellab.backends.interpreter."""
