"""The stand-in `triton.language`: what a Triton program evaluates in Python at import time
(annotations, constexpr globals, dtypes); kernel bodies are read by kernellab, never run here."""


class constexpr:
    def __init__(self, value):
        self.value = value


class dtype:
    def __init__(self, name: str):
        self.name = name


float16, float32 = dtype("fp16"), dtype("fp32")
