"""AMD GPUs, compile-only: gfx942 (MI300) and gfx950 (MI350) through LLVM AMDGPU."""
