"""Host-side helpers Triton keeps in `triton.tools` (`tensor_descriptor.TensorDescriptor`)."""
