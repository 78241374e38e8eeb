"""TTIR → TTGIR: give every tensor a layout, then choose layouts that make memory access fast.

One module per pass (convert_to_ttgpuir, coalesce, remove_layout_conversions,
reduce_data_duplication) and the AxisInfo analysis they and the lowering share (axis_info): a
library. Each backend says which of them run in which order (the NVIDIA backend's pipeline.py).
"""
