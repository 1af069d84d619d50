"""ferret for Python: regions, marks, counters and data objects, recorded by
ferret's runtime into the same trace as the program's GPU work and its C++
annotations. No third-party packages: the runtime's C functions
(ferret/c_api.h in libferret_runtime) are called through ctypes.

    import ferret

    with ferret.region("epoch"):                 # a region for the block
        ...

    @ferret.function                             # a region named after the function
    def train_step(batch): ...

    @ferret.region("evaluate")                   # or any name
    def evaluate(): ...

    ferret.mark("checkpoint saved")              # an instant
    loss_counter = ferret.counter("loss")
    loss_counter.record(loss.item())             # a counter sample

    with ferret.data_object("weights", model.fc.weight):   # a named tensor (or array)
        ...                                      # copies of its bytes name it

Nothing is recorded unless FERRET_BACKEND names a backend (ferret-run sets it);
then every call returns at once. Python call paths of GPU work need no
annotations at all: under ferret-run, the calling context of each kernel, copy
and allocation continues into the Python frames that launched it.

The runtime library is found beside this package (lib/python/ferret ->
lib/libferret_runtime.so.0, in a build tree as once installed), or where
FERRET_RUNTIME_LIBRARY points. Without it, every call does nothing and one line
says why.
"""

import ctypes
import functools
import inspect
import os
import sys
import threading

__all__ = [
    "region", "function", "begin", "end", "mark", "counter", "data_object",
    "register_data_object", "unregister_data_object", "set_thread_name",
    "set_metadata", "flush", "pause", "resume", "recording", "available",
]

_C_API_VERSION = 1
_MEMORY_KINDS = {"host": 0, "pinned": 1, "device": 2, "managed": 3}


def _load_runtime():
    here = os.path.dirname(os.path.abspath(__file__))
    # The library by its soname: the installed libferret_runtime.so is the
    # linker's script, not the library.
    candidates = [os.environ.get("FERRET_RUNTIME_LIBRARY"),
                  os.path.join(here, "..", "..", "libferret_runtime.so.0"),
                  "libferret_runtime.so.0"]
    errors = []
    for candidate in candidates:
        if not candidate:
            continue
        try:
            library = ctypes.CDLL(os.path.normpath(candidate) if os.sep in candidate else candidate)
        except OSError as error:
            errors.append(str(error))
            continue
        try:
            if library.ferret_c_api_version() != _C_API_VERSION:
                errors.append("%s has C API version %d, this module needs %d"
                              % (candidate, library.ferret_c_api_version(), _C_API_VERSION))
                continue
        except AttributeError:
            errors.append("%s has no ferret C API" % candidate)
            continue
        return library
    sys.stderr.write("ferret: cannot load libferret_runtime.so (%s); annotations do nothing\n"
                     % "; ".join(errors))
    return None


def _declare(library):
    c_void_p, c_char_p, c_double, c_int = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_double,
                                           ctypes.c_int)
    signatures = {
        "ferret_recording": ([], c_int),
        "ferret_name": ([c_char_p, c_char_p, c_char_p, c_char_p, ctypes.c_uint32], c_void_p),
        "ferret_region_begin": ([c_void_p], None),
        "ferret_region_end": ([c_void_p], None),
        "ferret_mark": ([c_void_p], None),
        "ferret_counter_record": ([c_void_p, c_double], None),
        "ferret_data_object_register": ([c_char_p, ctypes.c_size_t, ctypes.c_size_t, c_int, c_int],
                                        ctypes.c_uint64),
        "ferret_data_object_unregister": ([ctypes.c_uint64], None),
        "ferret_set_thread_name": ([c_char_p], None),
        "ferret_set_metadata_string": ([c_char_p, c_char_p], None),
        "ferret_set_metadata_number": ([c_char_p, c_double, c_int], None),
        "ferret_set_metadata_integer": ([c_char_p, ctypes.c_uint64, c_int], None),
        "ferret_flush": ([], None),
        "ferret_pause": ([], None),
        "ferret_resume": ([], None),
    }
    for name, (arguments, result) in signatures.items():
        function_ = getattr(library, name, None)
        if function_ is None:  # added since C API version 1 (set_metadata_integer)
            continue
        function_.argtypes = arguments
        function_.restype = result
    return library


_lib = _load_runtime()
if _lib is not None:
    _declare(_lib)
_names = {}
_names_lock = threading.Lock()


def available():
    """True when the runtime library was loaded (recording also needs FERRET_BACKEND)."""
    return _lib is not None


def recording():
    """True while events are recorded."""
    return _lib is not None and _lib.ferret_recording() != 0


def _encode(text):
    return None if text is None else str(text).encode("utf-8", "replace")


def _name(name, domain=None, function_name=None, file=None, line=0):
    """The runtime's handle of a name (registered once per distinct argument set)."""
    if _lib is None:
        return None
    key = (name, domain, function_name, file, line)
    handle = _names.get(key)
    if handle is None:
        with _names_lock:
            handle = _names.get(key)
            if handle is None:
                handle = _lib.ferret_name(_encode(name), _encode(domain), _encode(function_name),
                                          _encode(file), int(line))
                _names[key] = handle
    return handle


class region:
    """A region: `with ferret.region("name"):`, or `@ferret.region("name")` on a
    function (also async functions). Regions nest per thread with the program's
    other regions (C++ annotations, NVTX ranges). `domain` groups them (shown
    as the category)."""

    __slots__ = ("_handle",)

    def __init__(self, name, domain=None, _file=None, _line=0, _function=None):
        if _file is None and _lib is not None:
            caller = sys._getframe(1)
            _file, _line = caller.f_code.co_filename, caller.f_lineno
        self._handle = _name(name, domain, _function, _file, _line)

    def __enter__(self):
        if self._handle is not None:
            _lib.ferret_region_begin(self._handle)
        return self

    def __exit__(self, *exception):
        if self._handle is not None:
            _lib.ferret_region_end(self._handle)
        return False

    def __call__(self, wrapped):
        handle = self._handle
        if handle is None:
            return wrapped
        begin_, end_ = _lib.ferret_region_begin, _lib.ferret_region_end
        if inspect.iscoroutinefunction(wrapped):
            @functools.wraps(wrapped)
            async def async_wrapper(*arguments, **keywords):
                begin_(handle)
                try:
                    return await wrapped(*arguments, **keywords)
                finally:
                    end_(handle)
            return async_wrapper

        @functools.wraps(wrapped)
        def wrapper(*arguments, **keywords):
            begin_(handle)
            try:
                return wrapped(*arguments, **keywords)
            finally:
                end_(handle)
        return wrapper


def function(wrapped=None, *, domain=None):
    """Decorator: a region named after the function (its qualified name), with
    its file and first line. `@ferret.function` or `@ferret.function(domain="io")`."""
    def decorate(target):
        code = getattr(target, "__code__", None)
        qualified = getattr(target, "__qualname__", getattr(target, "__name__", "function"))
        return region(qualified, domain,
                      _file=code.co_filename if code else "",
                      _line=code.co_firstlineno if code else 0,
                      _function=qualified)(target)
    return decorate if wrapped is None else decorate(wrapped)


def begin(name, domain=None):
    """Opens a region that end(name) closes (for code that cannot use `with`)."""
    handle = _name(name, domain)
    if handle is not None:
        _lib.ferret_region_begin(handle)


def end(name, domain=None):
    handle = _name(name, domain)
    if handle is not None:
        _lib.ferret_region_end(handle)


def mark(name, domain=None):
    """An instant on the calling thread's timeline."""
    handle = _name(name, domain)
    if handle is not None:
        _lib.ferret_mark(handle)


class counter:
    """A numeric time series: `c = ferret.counter("loss"); c.record(0.25)`."""

    __slots__ = ("_handle",)

    def __init__(self, name, domain=None):
        self._handle = _name(name, domain)

    def record(self, value):
        if self._handle is not None:
            _lib.ferret_counter_record(self._handle, float(value))


def _memory_of(thing):
    """(address, bytes, memory kind, device) of a tensor, an array or a buffer."""
    if hasattr(thing, "data_ptr") and hasattr(thing, "nbytes"):  # torch.Tensor
        device = getattr(thing, "device", None)
        if getattr(thing, "is_cuda", False):
            index = getattr(device, "index", None)
            return thing.data_ptr(), int(thing.nbytes), "device", 0 if index is None else index
        pinned = getattr(thing, "is_pinned", None)
        return (thing.data_ptr(), int(thing.nbytes),
                "pinned" if pinned is not None and pinned() else "host", -1)
    for attribute, memory in (("__cuda_array_interface__", "device"),
                              ("__array_interface__", "host")):
        interface = getattr(thing, attribute, None)
        if interface is not None and hasattr(thing, "nbytes"):
            return interface["data"][0], int(thing.nbytes), memory, 0 if memory == "device" else -1
    view = memoryview(thing)
    if view.readonly:
        raise TypeError("ferret.data_object: a read-only buffer has no address ctypes can take")
    address = ctypes.addressof(ctypes.c_char.from_buffer(view))
    return address, view.nbytes, "host", -1


def register_data_object(name, thing=None, *, address=None, nbytes=None, memory="host", device=None):
    """Names a memory range until unregister_data_object(id): a tensor (torch),
    an array (numpy, anything with __array_interface__ / __cuda_array_interface__),
    a writable buffer, or address= and nbytes=. Returns the id (0: not recorded)."""
    if _lib is None:
        return 0
    if thing is not None:
        address, nbytes, memory, found_device = _memory_of(thing)
        device = found_device if device is None else device
    if address is None or nbytes is None:
        raise TypeError("ferret.register_data_object needs an object, or address= and nbytes=")
    if memory not in _MEMORY_KINDS:
        raise ValueError("memory must be one of %s" % ", ".join(_MEMORY_KINDS))
    if device is None:
        device = -1 if memory in ("host", "pinned") else 0
    return _lib.ferret_data_object_register(_encode(name), int(address), int(nbytes),
                                            _MEMORY_KINDS[memory], int(device))


def unregister_data_object(object_id):
    if _lib is not None and object_id:
        _lib.ferret_data_object_unregister(object_id)


class data_object:
    """A data object for the block: `with ferret.data_object("weights", tensor):`."""

    __slots__ = ("_id",)

    def __init__(self, name, thing=None, **range_):
        self._id = register_data_object(name, thing, **range_)

    @property
    def id(self):
        return self._id

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        unregister_data_object(self._id)
        self._id = 0
        return False


def set_thread_name(name):
    """Names the calling thread in the output."""
    if _lib is not None:
        _lib.ferret_set_thread_name(_encode(name))


def _say(line):
    """One line on stderr, as the runtime writes its own (one write)."""
    try:
        os.write(2, ("ferret: %s\n" % line).encode("utf-8", "replace"))
    except OSError:
        pass


def set_metadata(key, value):
    """A fact about the run (string or number), written with the output's metadata.
    Integers are exact from -2**63 to 2**64 - 1; one outside that range is not
    recorded (said on stderr), since no output holds it as a number."""
    if _lib is None:
        return
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _lib.ferret_set_metadata_string(_encode(key), _encode(value))
        elif isinstance(value, int):
            if not -2**63 <= value < 2**64:
                _say("set_metadata(%r): %d does not fit 64 bits; not recorded"
                     % (str(key), value) if value.bit_length() <= 256 else
                     "set_metadata(%r): an integer of %d bits does not fit 64 bits; not recorded"
                     % (str(key), value.bit_length()))
                return
            _lib.ferret_set_metadata_integer(_encode(key), value & (2**64 - 1), int(value < 2**63))
        else:
            _lib.ferret_set_metadata_number(_encode(key), float(value), 0)
    except Exception as error:  # never into the program: a key or value str() refuses
        _say("set_metadata: not recorded (%s: %s)" % (type(error).__name__, error))


def flush():
    """Drains every thread's buffered events to the backends now."""
    if _lib is not None:
        _lib.ferret_flush()


def pause():
    """Stops recording for the whole process until resume()."""
    if _lib is not None:
        _lib.ferret_pause()


def resume():
    if _lib is not None:
        _lib.ferret_resume()
