"""The classes a trace's parameter values may be, each by a key and its fields: the one list writer and reader share."""

from __future__ import annotations

import dataclasses

CLASSES = {
    "ShapedArray": ("jax._src.core", "ShapedArray"),
    "AbstractRef": ("jax._src.state.types", "AbstractRef"),
    "NDIndexer": ("jax._src.state.indexing", "NDIndexer"),
    "Slice": ("jax._src.state.indexing", "Slice"),
    "BitcastTransform": ("jax._src.state.types", "BitcastTransform"),
    "ReshapeTransform": ("jax._src.state.types", "ReshapeTransform"),
    "TransposeTransform": ("jax._src.state.types", "TransposeTransform"),
    "GridMapping": ("jax._src.pallas.core", "GridMapping"),
    "BlockMapping": ("jax._src.pallas.core", "BlockMapping"),
    "Blocked": ("jax._src.pallas.core", "Blocked"),
    "Squeezed": ("jax._src.pallas.core", "Squeezed"),
    "Element": ("jax._src.pallas.core", "Element"),
    "BoundedSlice": ("jax._src.pallas.core", "BoundedSlice"),
    "Buffered": ("jax._src.pallas.core", "Buffered"),
    "RevisitMode": ("jax._src.pallas.core", "RevisitMode"),
    "CostEstimate": ("jax._src.pallas.core", "CostEstimate"),
    "SideEffectType": ("jax._src.pallas.mosaic.core", "SideEffectType"),
    "CoreType": ("jax._src.pallas.mosaic.core", "CoreType"),
    "MemorySpace": ("jax._src.pallas.core", "MemorySpace"),
    "TPUMemorySpace": ("jax._src.pallas.mosaic.core", "MemorySpace"),
    "SemaphoreType": ("jax._src.pallas.mosaic.core", "SemaphoreType"),
    "GridDimensionSemantics": ("jax._src.pallas.mosaic.core", "GridDimensionSemantics"),
    "TPUCompilerParams": ("jax._src.pallas.mosaic.core", "CompilerParams"),
    "Semaphore": ("jax._src.pallas.core", "Semaphore"),
    "BarrierSemaphore": ("jax._src.pallas.core", "BarrierSemaphore"),
    "DMASemaphore": ("jax._src.pallas.mosaic.core", "DMASemaphore"),
    "TransformedRef": ("jax._src.state.types", "TransformedRef"),
    "Precision": ("jax._src.lax.lax", "Precision"),
    "DotAlgorithmPreset": ("jax._src.lax.lax", "DotAlgorithmPreset"),
    "RoundingMethod": ("jax._src.lax.lax", "RoundingMethod"),
    "GatherScatterMode": ("jax._src.lax.slicing", "GatherScatterMode"),
    "GatherDimensionNumbers": ("jax._src.lax.slicing", "GatherDimensionNumbers"),
    "ScatterDimensionNumbers": ("jax._src.lax.slicing", "ScatterDimensionNumbers"),
    "ConvDimensionNumbers": ("jax._src.lax.convolution", "ConvDimensionNumbers"),
    "LinearSolveTuple": ("jax._src.lax.control_flow.solves", "_LinearSolveTuple"),
    "FftType": ("jax._src.lax.fft", "FftType"),
    "RandomAlgorithm": ("jax._src.lax.lax", "RandomAlgorithm"),
    "DeviceIdType": ("jax._src.pallas.primitives", "DeviceIdType"),
    "InterpretParams": ("jax._src.pallas.mosaic.interpret.params", "InterpretParams"),
    "AxisType": ("jax._src.mesh", "AxisType"),
    "ArrayCopySemantics": ("jaxlib._jax", "ArrayCopySemantics"),
    "CoreMemorySpace": ("jax._src.core", "MemorySpace"),
    "ReadEffect": ("jax._src.state.types", "ReadEffect"),
    "WriteEffect": ("jax._src.state.types", "WriteEffect"),
    "AccumEffect": ("jax._src.state.types", "AccumEffect"),
}
"""The parameter classes that cross as objects, by key: the module and name JAX gives each."""

_KEYS: dict[type, str] = {}


def class_key(cls: type) -> str | None:
    """The key `CLASSES` gives `cls`, or None when it may not cross as an object."""
    if not _KEYS:
        import importlib

        for key, (module, name) in CLASSES.items():
            try:
                _KEYS[getattr(importlib.import_module(module), name)] = key
            except (ImportError, AttributeError):
                continue  # not in this JAX: nothing of it to send
    return _KEYS.get(cls)


def fields_of(cls: type) -> tuple[str, ...]:
    """The attributes that make an object of a listed class: its dataclass fields or its slots."""
    if dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls))
    slots: list[str] = []
    for klass in reversed(cls.__mro__):
        for name in getattr(klass, "__slots__", ()):
            if name not in ("__weakref__", "__dict__") and name not in slots:
                slots.append(name)
    return tuple(slots)
