#===- packing.py - cu_seqlens checked on their way to the kernels --------===#
#
# The compiled entry points take int32 offsets and, given invalid ones,
# write NaN (docs/torch.md). A user's mistake must not reach them silently,
# and checking must not cost a host synchronisation in the training loop:
#
#   - offsets on the CPU, as data loaders deliver them, are checked on the
#     host before they are copied to the GPU (no synchronisation: the values
#     are already on the host), and copied through pinned buffers of this
#     module's (_PinnedStaging), so that the copy is queued on the stream
#     rather than waiting for it;
#   - offsets already on the GPU are checked there by an asynchronous
#     assertion (torch._assert_async): a few tiny kernels, no
#     synchronisation; a violation stops the CUDA context with a
#     device-side assertion that the next synchronising call raises;
#     under torch.compile, offsets on the CPU are checked the same way (a
#     traced assertion), since a traced program reads no values;
#   - `validate=False` skips the value checks for a hot loop that produces
#     its offsets itself. The dtype and shape checks stay: they read no
#     values and cost nothing.
#
# The rules and their wording are the compiler's, whose one table is
# runtime/include/gdn/runtime/packing_rules.h (docs/spec.md, "Validation
# rules and messages"): cu_seqlens[0] == 0, non-decreasing, cu_seqlens[-1]
# == T, all within int32. test/Torch/check-offsets.test pins the wording.
#
#===------------------------------------------------------------------------===#

import threading

INT32_MAX = 2**31 - 1


def _offsets_violation(values, name):
    """The first of the rules every offsets array keeps (an entry, starting
    at 0, non-decreasing, within int32) that `values` breaks, or None."""
    if len(values) == 0:
        return f"{name} must have at least one entry (N + 1 for N sequences)"
    if values[0] != 0:
        return f"{name}[0] must be 0, found {values[0]}"
    for i in range(1, len(values)):
        if values[i] < values[i - 1]:
            return (f"{name} must be non-decreasing, but {name}[{i}] = {values[i]} < "
                    f"{name}[{i - 1}] = {values[i - 1]}")
        if values[i] > INT32_MAX:
            return (f"{name}[{i}] = {values[i]} exceeds the int32 token limit {INT32_MAX}; "
                    "split the pack")
    return None


def _total_violation(values, tokens, name):
    if values[-1] != tokens:
        return f"{name}[{len(values) - 1}] = {values[-1]} must equal the token count {tokens}"
    return None


def check_offsets_on_host(values, tokens, name="cu_seqlens"):
    """The first rule `values` (a list of Python ints) breaks, as a message,
    or None. `tokens` is the token count T the last entry must equal."""
    return _offsets_violation(values, name) or _total_violation(values, tokens, name)


def check_padded_on_host(values, padded, tokens):
    """The first rule a padded packing breaks, as a message, or None:
    cu_seqlens (`values`) start at 0 and do not decrease; cu_padded
    (`padded`) is a valid packing of `tokens` rows; both have N + 1
    entries; each sequence fits its slot (the compiler's order: cu_seqlens,
    cu_padded, then the slots)."""
    error = (_offsets_violation(values, "cu_seqlens") or _offsets_violation(padded, "cu_padded")
             or _total_violation(padded, tokens, "cu_padded"))
    if error:
        return error
    if len(padded) != len(values):
        return (f"cu_padded has {len(padded)} entries but cu_seqlens has {len(values)}; both "
                "need N + 1")
    for i in range(len(values) - 1):
        real, slot = values[i + 1] - values[i], padded[i + 1] - padded[i]
        if real > slot:
            return f"sequence {i} has {real} real tokens but its padded slot holds only {slot}"
    return None


def prepare_padded(cu_seqlens, cu_padded, tokens, device, validate=True, device_check=True):
    """cu_seqlens and cu_padded of a padded pack as the int32 tensors on
    `device` the compiled entry points take, checked as prepare_cu_seqlens
    checks one (on the host when both are on the CPU, by an asynchronous
    device assertion otherwise, or by the compiled library with
    `device_check=False`; the entry counts are compared either way)."""
    import torch

    cu = prepare_cu_seqlens(cu_seqlens, tokens, device, validate=False)
    slots = prepare_cu_seqlens(cu_padded, tokens, device, validate=False, name="cu_padded")
    on_host = cu_seqlens.device.type == "cpu" and cu_padded.device.type == "cpu"
    if validate and on_host and not _compiling():
        error = check_padded_on_host(cu_seqlens.tolist(), cu_padded.tolist(), tokens)
        if error:
            raise ValueError(error)
    elif validate:
        if cu.shape[0] != slots.shape[0]:  # shapes: no synchronisation
            raise ValueError(f"cu_padded has {slots.shape[0]} entries but cu_seqlens has "
                             f"{cu.shape[0]}; both need N + 1")
        if not device_check and cu_seqlens.dtype == cu_padded.dtype == torch.int32:
            return cu, slots
        ok = (cu[0] == 0) & (slots[0] == 0) & (slots[-1] == tokens)
        if cu.shape[0] > 1:
            ok = ok & torch.all(cu[1:] >= cu[:-1]) & torch.all(slots[1:] >= slots[:-1])
            ok = ok & torch.all(cu[1:] - cu[:-1] <= slots[1:] - slots[:-1])
        _assert_async(ok, f"cu_seqlens and cu_padded must start at 0 and be non-decreasing, "
                          f"cu_padded must end at the token count {tokens}, and every sequence "
                          f"must fit its slot")
    return cu, slots


def prepare_cu_seqlens(cu_seqlens, tokens, device, validate=True, name="cu_seqlens",
                       device_check=True):
    """`cu_seqlens` as the int32 tensor on `device` the compiled entry points
    take, checked as this module's header says. Raises TypeError for a
    tensor that is not of an integer dtype or not 1-D, ValueError (host
    check) for offsets that break a rule. `device_check=False` leaves
    offsets already on the device to the compiled library, whose first
    kernel validates them and stops with a device-side assertion
    (gdn_torch compiles its libraries with GDN_TRAP_INVALID_PACKING): the
    same failure without the assertion's extra launches."""
    import torch  # check_offsets_on_host is usable without torch

    if not isinstance(cu_seqlens, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of int32 or int64 offsets, "
                        f"got {type(cu_seqlens).__name__}")
    if cu_seqlens.dtype not in (torch.int32, torch.int64, torch.int16, torch.int8, torch.uint8):
        raise TypeError(f"{name} must hold integers (int32, or int64 within int32), got "
                        f"{cu_seqlens.dtype}; offsets are token counts, cast them with "
                        ".to(torch.int32) only if they are whole numbers")
    if cu_seqlens.dim() != 1 or cu_seqlens.shape[0] < 1:
        raise ValueError(f"{name} must be 1-D with N + 1 >= 1 entries, got shape "
                         f"{tuple(cu_seqlens.shape)}")
    if tokens > INT32_MAX:
        raise ValueError(f"{tokens} tokens exceed the int32 token limit {INT32_MAX}; split the pack")
    # Under torch.compile the host check would read values while tracing
    # (a graph break, or a failed fullgraph): the tensor check below is
    # traced instead, and asserts when the graph runs.
    if validate and cu_seqlens.device.type == "cpu" and not _compiling():
        error = check_offsets_on_host(cu_seqlens.tolist(), tokens, name)
        if error:
            raise ValueError(error)
    elif validate and (device_check or cu_seqlens.dtype != torch.int32):
        # On the device, without a synchronisation (also when the library
        # validates: the cast of wider offsets below could wrap a hostile
        # entry into a valid-looking one). With the first entry 0,
        # the entries non-decreasing and the last T (< 2^31), every entry is
        # within int32, so the int64 -> int32 cast below cannot wrap.
        cu = cu_seqlens
        ok = (cu[0] == 0) & (cu[-1] == tokens)
        if cu.shape[0] > 1:
            ok = ok & torch.all(cu[1:] >= cu[:-1])
        _assert_async(ok, f"{name} must start at 0, be non-decreasing and end at the "
                          f"token count {tokens}")
    if cu_seqlens.device.type == "cpu" and torch.device(device).type == "cuda" \
            and not _compiling():
        return _staging.copy(cu_seqlens, torch.device(device), name)
    return cu_seqlens.to(device=device, dtype=torch.int32, non_blocking=True)


def _compiling():
    import torch

    compiler = getattr(torch, "compiler", None)
    return bool(compiler and hasattr(compiler, "is_compiling") and compiler.is_compiling())


def _assert_async(condition, message):
    """torch._assert_async with its message where this torch takes one."""
    import torch

    try:
        torch._assert_async(condition, message)
    except (TypeError, RuntimeError, NotImplementedError):
        torch._assert_async(condition)


class _PinnedStaging:
    """Pinned host buffers that offsets on the CPU are copied to the GPU
    through. A copy from pageable memory waits for the stream to drain (a
    host synchronisation per call); from pinned memory it is queued. A
    fresh pinned tensor per call would not do: while the GPU runs behind,
    torch's caching host allocator cannot reuse the blocks of earlier calls
    and allocates (cudaHostAlloc, which synchronises). So each stream has a
    ring of buffers, each rewritten only once the copy that last read it
    has run (its event): a training loop allocates nothing once warm, and
    waits only when its stream is more than SLOTS calls behind. One ring
    per stream, so that a wait depends on that stream's own work only (the
    ranks of a threads backend each run on a stream of their own)."""

    SLOTS = 64

    def __init__(self):
        self._lock = threading.Lock()
        self._rings = {}  # (device, stream) -> _Ring

    def copy(self, values, device, name="cu_seqlens"):
        """`values` (a CPU tensor of integers) as int32 on `device`,
        enqueued on its current stream."""
        import torch

        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError(f"gdn_torch: {name} is on the host, and a CUDA graph would replay "
                               f"this call's offsets whatever the next batch holds: move "
                               f"{name} to the GPU before capturing (then the graph reads the "
                               f"tensor it captured, which you update in place)")
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        stream = torch.cuda.current_stream(device)
        with self._lock:
            ring = self._rings.setdefault((device, stream.cuda_stream), _Ring(self.SLOTS))
        with ring.lock:
            slot = ring.next
            ring.next = (slot + 1) % len(ring.slots)
            buffer, event = ring.slots[slot] or (None, None)
            if event is not None:
                event.synchronize()  # the copy that last read this buffer has run
            count = values.shape[0]
            if buffer is None or buffer.shape[0] < count:
                buffer = torch.empty(max(count, 256), dtype=torch.int32, device="cpu",
                                     pin_memory=True)
            buffer[:count].copy_(values)
            out = buffer[:count].to(device=device, non_blocking=True)
            event = event or torch.cuda.Event()
            event.record(stream)
            ring.slots[slot] = (buffer, event)
            return out


class _Ring:
    def __init__(self, slots):
        self.lock = threading.Lock()
        self.next = 0
        self.slots = [None] * slots


_staging = _PinnedStaging()
