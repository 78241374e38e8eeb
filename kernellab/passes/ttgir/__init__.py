"""TTIR → TTGIR: give every tensor a layout, then choose layouts that make memory access fast.

One module per pass (convert_to_ttgpuir, coalesce, remove_layout_conversions,
reduce_data_duplication), the AxisInfo analysis they and the lowering share (axis_info), and
the pipeline that runs them (pipeline.make_ttgir).
"""
