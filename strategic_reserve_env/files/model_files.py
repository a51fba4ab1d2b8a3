"""What a model file holds, read from its headers before any tensor is: the checks every model format shares.
A crafted file can claim a huge network in a few bytes, so the loaders (`agents.ppo_file`, `value_network`,
`az_net`, `rllib_model`) check description and headers against each other before allocating, then the values
(`check_finite`); each fault is one line of the caller's error type naming the file and the field.
"""

from __future__ import annotations

import math
import os
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import safe_json

MAX_HEADER_BYTES = 16 * 2**20  # a safetensors header larger than this is refused (ours are a few kB)
MAX_NPY_HEADER_BYTES = 10_000  # numpy's own default bound on an .npy header
SAFETENSORS_DTYPES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1}
SAFETENSORS_DTYPES |= {"BOOL": 1, "U16": 2, "U32": 4, "U64": 8, "F8_E4M3": 1, "F8_E5M2": 1}
ANY_SIZE = 2**63 - 1  # a model file's size is bounded by its header's claims (checked), not before opening it
_LENGTH_BYTES = 8  # a safetensors file starts with its header's length, a little-endian u64


@dataclass(frozen=True)
class Tensor:
    """A tensor as a header describes it: dtype (safetensors' `F32` or numpy's `float32`) and shape."""

    dtype: str
    shape: tuple[int, ...]


def _shape(value: object) -> tuple[int, ...] | None:
    """`value` as a shape (a list of ints >= 0), or None."""
    ok = isinstance(value, list) and all(type(n) is int and n >= 0 for n in value)
    return tuple(value) if ok else None  # type: ignore[arg-type]


def safetensors_header(
    path: str | Path, error: type[Exception] = ValueError
) -> tuple[dict[str, str], dict[str, Tensor]]:
    """`(metadata, tensors)` of a safetensors file from its header; `error` naming `path` unless it is bounded JSON
    whose tensors have known dtypes and byte ranges that fit their shapes and fill the rest of the file."""
    path = Path(path)
    with safe_json.open_regular(path, ANY_SIZE, error=error, follow_links=True) as file:
        size = os.fstat(file.fileno()).st_size
        length = int.from_bytes(file.read(_LENGTH_BYTES), "little")
        if size < _LENGTH_BYTES or length > min(MAX_HEADER_BYTES, size - _LENGTH_BYTES):
            raise error(
                f"{path}: not a safetensors file (its header claims {length} bytes, the file has {size}, "
                f"at most {MAX_HEADER_BYTES} are read)"
            )
        text = file.read(length)
    header = safe_json.loads(text, f"{path}: not a safetensors file: its header", error)
    if not isinstance(header, dict):
        raise error(f"{path}: not a safetensors file: its header is not a JSON object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise error(f"{path}: the header's __metadata__ must map names to strings")
    tensors, ranges = {}, []
    for name, entry in header.items():
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise error(f"{path}: tensor {name!r} must have exactly dtype, shape and data_offsets")
        dtype, shape, offsets = entry["dtype"], _shape(entry["shape"]), _shape(entry["data_offsets"])
        if not isinstance(dtype, str) or dtype not in SAFETENSORS_DTYPES:
            raise error(f"{path}: tensor {name!r} has dtype {dtype!r}, not one of {', '.join(SAFETENSORS_DTYPES)}")
        if shape is None or offsets is None or len(offsets) != 2:
            raise error(f"{path}: tensor {name!r} needs a shape and two data_offsets, lists of ints >= 0")
        if offsets[1] - offsets[0] != math.prod(shape) * SAFETENSORS_DTYPES[dtype]:
            raise error(f"{path}: tensor {name!r} of shape {list(shape)} {dtype} does not fill bytes {list(offsets)}")
        tensors[name] = Tensor(dtype, shape)
        ranges.append(offsets)
    data = size - _LENGTH_BYTES - length
    bounds = [0, *(offset for pair in sorted(ranges) for offset in pair), data]
    if bounds[0::2] != bounds[1::2]:  # each range starts where the one before it ends, the last at the end
        raise error(f"{path}: the tensors' byte ranges do not cover the file's {data} bytes of data exactly")
    return metadata, tensors


def npz_headers(path: str | Path, error: type[Exception] = ValueError) -> dict[str, Tensor]:
    """`{name: Tensor}` of an `.npz` file from its zip directory and `.npy` headers; `error` naming `path` and the
    member unless each is an array of numbers whose header is bounded and whose size fits the directory."""
    path = Path(path)
    found: dict[str, Tensor] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                name = info.filename.removesuffix(".npy")
                if not info.filename.endswith(".npy") or name in found:
                    raise error(f"{path}: member {info.filename!r} is not one .npy array")
                with archive.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
                    if version not in read:
                        raise error(f"{path}: member {info.filename!r} has .npy version {version}")
                    shape, _, dtype = read[version](member, max_header_size=MAX_NPY_HEADER_BYTES)
                    header_bytes = member.tell()
                if dtype.hasobject or dtype.kind not in "biuf":
                    raise error(f"{path}: member {info.filename!r} has dtype {dtype}; only numbers are read")
                if info.file_size != header_bytes + math.prod(shape) * dtype.itemsize:
                    raise error(
                        f"{path}: member {info.filename!r} claims shape {shape} {dtype}, which does not fit its "
                        f"{info.file_size} bytes"
                    )
                found[name] = Tensor(str(dtype), tuple(shape))
    except (OSError, zipfile.BadZipFile, zlib.error, EOFError) as problem:
        raise error(f"{path}: not a readable .npz archive ({problem})") from None
    except ValueError as problem:  # numpy's header parser: a malformed .npy header
        if isinstance(problem, error):
            raise
        raise error(f"{path}: an .npy header does not parse ({str(problem).splitlines()[0]})") from None
    return found


def npz_arrays(path: str | Path, names, error: type[Exception] = ValueError) -> dict[str, np.ndarray]:
    """The arrays `names` of the `.npz` file `path` (check `npz_headers` first), without pickles; `error` naming
    `path` for a damaged member."""
    try:
        with np.load(path, allow_pickle=False) as arrays:
            return {name: arrays[name] for name in names}
    except (OSError, zipfile.BadZipFile, zlib.error, EOFError, ValueError, KeyError) as problem:
        reason = str(problem).splitlines()[0][:160] if str(problem) else ""
        raise error(f"{path}: a damaged .npz member ({type(problem).__name__}: {reason})") from None


def header_description(
    path: str | Path, key: str, format_name: str, error: type[Exception] = ValueError
) -> tuple[object, dict[str, Tensor]]:
    """`(description, tensors)` of a safetensors model file: the JSON under metadata `key` (for
    `check_description`) and the tensors; `error` naming `path` for a bad header or no description."""
    metadata, tensors = safetensors_header(path, error)
    if key not in metadata:
        raise error(f"{path}: no {key!r} description in the header: not a {format_name} file")
    return safe_json.loads(metadata[key], f"{path}: the description", error), tensors


def check_description(
    description: object, where: str, format_name: str, version: int, keys: set[str], error: type[Exception] = ValueError
) -> dict:
    """`description` if it is an object of format `format_name`, version `version` and fields among `keys`;
    `error` naming `where` and the fault otherwise."""
    if not isinstance(description, dict) or description.get("format") != format_name:
        raise error(f"{where}: not a {format_name} description (its 'format' must be {format_name!r})")
    if description.get("version") != version:
        raise error(f"{where}: format version {description.get('version')!r}; this code reads {version}")
    unknown = sorted(set(description) - keys)
    if unknown:
        raise error(f"{where}: unknown fields {unknown}")
    return description


def check_finite(tensors: Mapping[str, object], where: str, error: type[Exception] = ValueError) -> None:
    """`error` naming `where` and the tensor if one of `tensors` (arrays, or CPU tensors) holds NaN or inf."""
    for name, tensor in tensors.items():
        if not np.isfinite(np.asarray(tensor)).all():
            raise error(f"{where}: tensor {name} holds NaN or infinite values")


def check_tensors(
    found: Mapping[str, Tensor], expected: Mapping[str, Tensor], where: str, error: type[Exception] = ValueError
) -> None:
    """`error` naming `where` unless `found` has exactly `expected`'s names, shapes and dtypes."""
    missing, unexpected = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
    if missing or unexpected:
        raise error(
            f"{where}: the tensors do not fit the described network: missing {missing}, unexpected {unexpected}"
        )
    for name, tensor in expected.items():
        if found[name] != tensor:
            raise error(
                f"{where}: tensor {name} is {list(found[name].shape)} {found[name].dtype}, "
                f"the described network has {list(tensor.shape)} {tensor.dtype}"
            )
