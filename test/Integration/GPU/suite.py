# test/Integration/GPU/suite.py - what prepare.py (where MLIR is) and run.py
# (on the GPU machine) share: the manifest's name and version, element types,
# and the comparison of a result with its reference. NumPy is imported where
# it is used, so that run.py's driver reports a machine without it as failed
# cases instead of stopping.

MANIFEST = "manifest.json"
VERSION = 1

# Element types of function arguments and results: how the suite stores them
# (.npy files: floats as float32 holding bf16-exact values, integers as
# int64) and how they are laid out in memory for the compiled function.
FLOAT_TYPES = ("f32", "bf16", "f16")
INT_TYPES = ("i64", "i32", "index")


def case_dir(name):
    """The folder of a case's files under cases/, from its name."""
    return name.replace("/", "__")


def compare(out, ref, tol):
    """(error, ok, detail) of `out` against `ref` under tol, the manifest's
    {"kind": "rtol"|"atol"|"exact", "bar": x}: rtol is max|out - ref| /
    max|ref| (max|out - ref| where ref is all zeros), atol max|out - ref|,
    exact the number of differing elements. Non-finite values in out and
    shape mismatches fail."""
    import numpy as np
    out, ref = np.asarray(out), np.asarray(ref)
    if out.shape != ref.shape:
        return float("inf"), False, f"shape {list(out.shape)}, expected {list(ref.shape)}"
    if tol["kind"] == "exact":
        differ = out != ref
        count = int(np.count_nonzero(differ))
        detail = ""
        if count:
            first = tuple(int(i) for i in np.argwhere(differ)[0])
            detail = (f"{count} of {out.size} elements differ, first at {list(first)}: "
                      f"{out[first]} vs {ref[first]}")
        return count, count == 0, detail
    if out.size == 0:
        return 0.0, True, "empty"
    out64, ref64 = out.astype(np.float64), ref.astype(np.float64)
    bad = int(np.size(out64) - np.count_nonzero(np.isfinite(out64)))
    if bad:
        return float("inf"), False, f"{bad} non-finite values"
    diff = float(np.max(np.abs(out64 - ref64)))
    scale = float(np.max(np.abs(ref64)))
    error = diff / scale if tol["kind"] == "rtol" and scale > 0 else diff
    return error, error <= tol["bar"], ""


def bf16_to_f32(bits):
    """float32 values of bf16 bit patterns (uint16)."""
    import numpy as np
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(values):
    """bf16 bit patterns (uint16) of float32 values, rounded to nearest even
    (exact for the suite's bf16-exact inputs)."""
    import numpy as np
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype(np.uint16)


def uniform_segments(seed, segments):
    """float32 values exact in bf16: for each (count, low, high) of segments
    in turn, count values uniform in [low, high). Value i comes from
    splitmix64((seed << 32) + i), integer arithmetic and one IEEE multiply
    and add, so every machine and NumPy version makes the same bits
    (run.py regenerates the inputs too large to carry and checks them with
    digest())."""
    import numpy as np
    total = sum(count for count, _, _ in segments)
    z = np.arange(total, dtype=np.uint64) + np.uint64((seed & 0xFFFFFFFF) << 32)
    z += np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    u = (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    low = np.repeat([float(s[1]) for s in segments], [s[0] for s in segments])
    high = np.repeat([float(s[2]) for s in segments], [s[0] for s in segments])
    values = (low + (high - low) * u).astype(np.float32)
    return bf16_to_f32(f32_to_bf16(values))


def digest(array):
    """sha256 of an array's dtype, shape and bytes."""
    import hashlib
    import numpy as np
    a = np.ascontiguousarray(array)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()
