# bench/common.py - what the GPU benchmarks share: calling a kernel compiled
# by moe-lower-to-nvvm through its C interface (memref descriptors, inputs in
# host-shared memory, results read back and freed through libmoert_mlir.so),
# relative errors, CUDA timing and the bf16 GEMM ceiling.

import ctypes

import numpy as np
import torch


def memref_type(rank):
    class MemRef(ctypes.Structure):
        _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                    ("offset", ctypes.c_int64), ("sizes", ctypes.c_int64 * rank),
                    ("strides", ctypes.c_int64 * rank)]
    return MemRef


MEMREF = {r: memref_type(r) for r in (1, 2, 3, 4)}


def descriptor(array, ptr=None):
    """A memref descriptor viewing a C-contiguous numpy array, or a copy of
    it at ptr."""
    assert array.flags["C_CONTIGUOUS"]
    d = MEMREF[array.ndim]() if array.ndim in MEMREF else memref_type(array.ndim)()
    d.allocated = d.aligned = array.ctypes.data if ptr is None else ptr
    d.offset = 0
    for i, (n, s) in enumerate(zip(array.shape, array.strides)):
        d.sizes[i] = n
        d.strides[i] = s // array.itemsize
    return d


def tensor_descriptor(tensor):
    """A memref descriptor viewing a torch tensor in place (device memory:
    the kernel generator's launches read their arguments where they are, so
    nothing is copied); strides in elements, any element type."""
    d = MEMREF[tensor.dim()]()
    d.allocated = d.aligned = tensor.data_ptr()
    d.offset = 0
    for i, (n, s) in enumerate(zip(tensor.shape, tensor.stride())):
        d.sizes[i] = n
        d.strides[i] = s
    return d


def read_result(result, ctype=ctypes.c_float, dtype=np.float32):
    """Copies a result descriptor's (possibly strided) view out of its buffer."""
    rank = len(result.sizes)
    shape = tuple(result.sizes)
    if int(np.prod(shape)) == 0:
        return np.zeros(shape, dtype)
    span = result.offset + sum((shape[i] - 1) * result.strides[i] for i in range(rank)) + 1
    flat = np.ctypeslib.as_array((ctype * span).from_address(result.aligned))
    size = np.dtype(dtype).itemsize
    view = np.lib.stride_tricks.as_strided(
        flat[result.offset:], shape=shape,
        strides=tuple(size * result.strides[i] for i in range(rank)))
    return np.array(view, dtype=dtype, copy=True)


class CompiledKernel:
    """`_mlir_ciface_<name>` of a kernel library linked against
    libmoert_mlir.so. call(results, arrays) passes the arrays (copied into
    host-shared memory: the kernels read their arguments in place, and a GPU
    without HMM cannot read pageable host memory) and fills the ctypes
    structure `results`; free_results() releases what the callee allocated."""

    def __init__(self, lib_path, adapter_path, name):
        self.adapter = ctypes.CDLL(adapter_path, mode=ctypes.RTLD_GLOBAL)
        self.adapter.moertMlirGetError.restype = ctypes.c_char_p
        self.adapter.moertMlirFree.argtypes = [ctypes.c_void_p]
        self.adapter.moertMlirAllocShared.restype = ctypes.c_void_p
        self.adapter.moertMlirAllocShared.argtypes = [ctypes.c_ulonglong]
        self.adapter.moertMlirKernelMilliseconds.restype = ctypes.c_double
        self.adapter.moertMlirSetKernelTiming.argtypes = [ctypes.c_int]
        self.lib = ctypes.CDLL(lib_path)
        self.fn = getattr(self.lib, "_mlir_ciface_" + name)
        self.fn.restype = None

    def check(self, what):
        err = self.adapter.moertMlirGetError().decode()
        if err:
            raise RuntimeError(f"moert ({what}): {err}")

    def call(self, results, arrays):
        ptrs = []
        try:
            args = []
            for a in arrays:
                a = np.ascontiguousarray(a, dtype=np.float32)
                ptr = self.adapter.moertMlirAllocShared(max(a.nbytes, 1))
                self.check("moertMlirAllocShared")
                if not ptr:
                    raise RuntimeError("moertMlirAllocShared returned null")
                ctypes.memmove(ptr, a.ctypes.data, a.nbytes)
                ptrs.append(ptr)
                args.append(descriptor(a, ptr))
            self.fn(ctypes.byref(results), *[ctypes.byref(a) for a in args])
            self.check("call")
        finally:
            for ptr in ptrs:
                self.adapter.moertMlirFree(ptr)

    def call_in_place(self, results, tensors):
        """Calls with descriptors of torch tensors (device memory), for
        functions whose GPU code reads its arguments in place."""
        args = [tensor_descriptor(t) for t in tensors]
        # Our launches go to the runtime's own streams, which do not wait
        # for PyTorch's: the inputs' producers must be done first.
        torch.cuda.synchronize()
        self.fn(ctypes.byref(results), *[ctypes.byref(a) for a in args])
        self.check("call")

    def time_in_place(self, make_results, tensors, iters):
        """For a function whose results make_results() builds (one
        descriptor, or a structure of them): (kernel ms, call ms) per call: the GPU time of the launches
        (CUDA events around each, summed) and the host wall time of the whole
        call (allocation of results included), averaged over iters calls
        after one warm-up call."""
        import time
        def free(results):
            if hasattr(results, "allocated"):
                self.free_results(results)
            else:  # a structure of descriptors
                self.free_results(*[getattr(results, f) for f, _ in results._fields_])

        results = make_results()
        self.call_in_place(results, tensors)
        free(results)
        self.adapter.moertMlirSetKernelTiming(1)
        self.adapter.moertMlirKernelMilliseconds()
        kernel_ms, wall = 0.0, 0.0
        for _ in range(iters):
            results = make_results()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            self.call_in_place(results, tensors)
            wall += time.perf_counter() - t0
            kernel_ms += self.adapter.moertMlirKernelMilliseconds()
            free(results)
        self.adapter.moertMlirSetKernelTiming(0)
        self.check("timing")
        times = (ctypes.c_double * 16)()
        count = self.adapter.moertMlirLastKernelTimes(times, 16)
        self.last_launch_ms = [times[i] for i in range(min(count, 16))]
        return kernel_ms / iters, wall * 1e3 / iters

    def free_results(self, *descriptors):
        freed = set()
        for r in descriptors:
            if r.allocated and r.allocated not in freed:
                self.adapter.moertMlirFree(r.allocated)
                freed.add(r.allocated)
        self.check("free")


def result_tensor(result, dtype):
    """A torch tensor on the GPU copied from a result descriptor of a
    contiguous buffer in host-shared memory (any element type)."""
    shape = tuple(result.sizes)
    out = torch.empty(shape, dtype=dtype, device="cuda")
    if out.numel():
        nbytes = out.numel() * out.element_size()
        src = (ctypes.c_uint8 * nbytes).from_address(
            result.aligned + result.offset * out.element_size())
        staging = torch.frombuffer(src, dtype=torch.uint8)
        out.view(torch.uint8).view(-1).copy_(staging)
    return out


def rel_error(a, ref):
    """max|a - ref| / max|ref|, or inf when a holds a non-finite value."""
    a = np.asarray(a, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        return float("inf")
    return float(np.max(np.abs(a - ref)) / np.max(np.abs(ref)))


def cuda_time(fn, iters):
    """Mean milliseconds of fn() by CUDA events after a warm-up."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def graph_time(fn, iters):
    """Mean milliseconds of a CUDA-graph replay of fn() (no launch gaps);
    falls back to plain CUDA events when fn cannot be captured. Returns
    (ms, method)."""
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        return cuda_time(graph.replay, iters), "cuda_graph"
    except Exception:  # capture unsupported: time the eager calls instead
        torch.cuda.synchronize()
        return cuda_time(fn, iters), "cuda_events"


def gemm_ceiling():
    """Best bf16 cuBLAS GEMM TFLOP/s over a few large square shapes, and the
    rate of each shape."""
    best, per_shape = 0.0, {}
    for n in (4096, 8192, 16384):
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        ms = cuda_time(lambda: torch.matmul(a, b, out=c), 20 if n < 16384 else 5)
        per_shape[str(n)] = 2 * n ** 3 / (ms * 1e-3) / 1e12
        best = max(best, per_shape[str(n)])
        del a, b, c
    torch.cuda.empty_cache()
    return best, per_shape


def copy_bandwidth():
    """Device-to-device copy rate in TB/s (bytes read plus written)."""
    x = torch.empty(1 << 30, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    ms = cuda_time(lambda: y.copy_(x), 10)
    del x, y
    torch.cuda.empty_cache()
    return 2 * (1 << 30) * 4 / (ms * 1e-3) / 1e12
