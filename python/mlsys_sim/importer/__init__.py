"""Bring your own model: ONNX (and PyTorch, through torch.onnx.export) networks as problems of the contest
format, priced by a hardware profile. docs/import.md describes the lowering and its conventions."""

from .api import ImportReport, import_onnx, import_torch, mac_count  # noqa: F401
from .onnx_graph import ImportError_ as ModelImportError  # noqa: F401
from .profiles import HardwareProfile, ProfileError, load_profile, presets  # noqa: F401
