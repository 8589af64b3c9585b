"""The per-op and per-kernel tables of `ftbench run --profile-steps`, in Python, for the references.

A port of ftbench's src/report/metrics/profile_table.h and src/report/metrics/profile_table.cpp
(parse_profile_steps, profiler_dtype_bytes, input_bytes_of, tabulate_profile, op_table_csv,
kernel_table_csv) and of the event selection of src/report/metrics/torch/step_profiler.cpp
(events_of_kineto), so that a reference profiled with torch.profiler writes the same CSV files
from the same raw events and scripts/profile-side-by-side.py can set the two side by side.
Standard library only: torch's events are read through their methods, never imported.
"""

from collections import namedtuple

MAX_PROFILE_STEP = 1_000_000_000

# Event kinds, as ProfileEventKind.
OP, SCOPE, KERNEL, TRANSFER = "op", "scope", "kernel", "transfer"

# One timed event. input_bytes: None where unknown (no shapes recorded, a dtype of unknown size).
ProfileEvent = namedtuple("ProfileEvent",
                          "name kind thread start_ns duration_ns flops input_bytes",
                          defaults=(0, None))

OP_HEADER = "name,calls,self_ms,total_ms,self_share,flops,tflop_per_s,input_bytes,input_gb_per_s"
KERNEL_HEADER = "name,kind,calls,total_ms,share,mean_us"


def quoted(text):
    """ftbench's text::quoted: in double quotes, control characters escaped, cut after 160
    bytes when longer than 200."""
    raw = text.encode("utf-8", "surrogateescape")
    cut = len(raw) > 200
    shown = raw[:160].decode("utf-8", "ignore") if cut else text
    out = []
    for ch in shown:
        cp = ord(ch)
        if cp < 0x20 or cp == 0x7F:
            out.append(f"\\x{cp:02X}")
        elif (0x80 <= cp <= 0x9F or cp in (0x061C, 0x200E, 0x200F) or 0x202A <= cp <= 0x202E
              or 0x2066 <= cp <= 0x2069):
            out.append(f"\\u{cp:04X}")
        elif 0xDC80 <= cp <= 0xDCFF:  # an undecodable byte (surrogateescape)
            out.append(f"\\x{cp - 0xDC00:02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"' + (f" (cut; {len(raw)} bytes in all)" if cut else "")


def _whole_step(digits):
    if not digits or len(digits) > 10 or any(c not in "0123456789" for c in digits):
        return None
    value = int(digits)
    return value if 1 <= value <= MAX_PROFILE_STEP else None


def parse_profile_steps(text):
    """"N" or "N,M" -> (N, M), 1 <= N <= M <= 10^9; ValueError with ftbench's message otherwise."""
    head, comma, tail = text.partition(",")
    first = _whole_step(head)
    last = _whole_step(tail) if comma else first
    if first is None or last is None or last < first:
        raise ValueError("--profile-steps: expected N or N,M (whole numbers of steps, "
                         f"1 <= N <= M <= {MAX_PROFILE_STEP}), found {quoted(text)}")
    return first, last


def window_text(window):
    first, last = window
    return f"{first}" if first == last else f"{first},{last}"


def profile_stem(out_path):
    """Where the profile files go by default: beside --out, its path without a final .json."""
    if not out_path:
        return "hf-peft"
    return out_path[:-5] if len(out_path) > 5 and out_path.endswith(".json") else out_path


def profile_paths(stem):
    return {"trace": stem + ".profile-trace.json", "ops_table": stem + ".profile-ops.csv",
            "kernels_table": stem + ".profile-kernels.csv"}


_DTYPE_BYTES = {
    "double": 8, "float": 4, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "long": 8,
    "int": 4, "short int": 2, "short": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "c10::complex<float>": 8, "c10::complex<double>": 16, "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1,
    # Not tensors: no bytes of their own.
    "": 0, "Scalar": 0, "ScalarList": 0, "TensorList": 0, "GenericList": 0, "None": 0,
    "Device": 0, "Layout": 0, "ScalarType": 0, "String": 0,
}


def profiler_dtype_bytes(dtype):
    """Bytes of an element of the dtype as the profiler names it; 0 for a non-tensor argument;
    None for a name it does not know."""
    return _DTYPE_BYTES.get(dtype)


def input_bytes_of(shapes, dtypes):
    total = 0
    for i, dtype in enumerate(dtypes):
        element = profiler_dtype_bytes(dtype)
        if element is None:
            return None
        if element == 0:
            continue
        numel = 1  # a 0-dimensional tensor holds one element
        for d in (shapes[i] if i < len(shapes) else ()):
            numel *= d
        total += numel * element
    return total


def _activity(event):
    activity = event.activity_type()
    return activity if isinstance(activity, str) else str(activity)


def _is_cpu(event):
    device = event.device_type()
    return getattr(device, "name", str(device).rsplit(".", 1)[-1]) == "CPU"


def event_of_kineto(k, user_scope=7):
    """One of torch's raw profiler events (torch.autograd.profiler's kineto_results.events(), the
    KinetoEvent that ftbench reads in C++) as a ProfileEvent, or None for what the tables leave
    out: the profiler's own overhead, device copies of host annotations, other device activity,
    and the ops torch.profiler.record_function itself runs (profiler::_record_function_*: no
    counterpart in ftbench, which marks its scopes without an op). user_scope:
    at::RecordScope::USER_SCOPE, what record_function's events have as scope()."""
    name = k.name()
    activity = _activity(k)
    if activity == "overhead":
        return None
    start, duration = int(k.start_ns()), int(k.duration_ns())
    if _is_cpu(k):
        if name.startswith("profiler::_record_function"):
            return None
        shapes = [list(s) for s in k.shapes()]
        kind = SCOPE if int(k.scope()) == user_scope else OP
        return ProfileEvent(name, kind, int(k.start_thread_id()), start, duration, int(k.flops()),
                            input_bytes_of(shapes, list(k.dtypes())) if shapes else None)
    if activity in ("gpu_memcpy", "gpu_memset"):
        kind = TRANSFER
    elif activity == "kernel":
        kind = KERNEL
    else:
        return None  # gpu_user_annotation and anything else on the device
    return ProfileEvent(name, kind, int(k.device_resource_id()), start, duration, 0, None)


def events_of_kineto(kineto_events):
    return [e for e in map(event_of_kineto, kineto_events) if e is not None]


def _is_host(kind):
    return kind in (OP, SCOPE)


# Ops that move no tensor data (views, metadata, allocation without a fill): ftbench's
# touches_no_data() in src/report/metrics/profile_table.cpp.
TOUCHES_NO_DATA = frozenset([
    "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias",
    "aten::as_strided", "aten::narrow", "aten::slice", "aten::select", "aten::t",
    "aten::transpose", "aten::permute", "aten::expand", "aten::expand_as", "aten::unsqueeze",
    "aten::squeeze", "aten::detach", "aten::alias", "aten::split", "aten::split_with_sizes",
    "aten::chunk", "aten::unbind", "aten::unflatten", "aten::flatten", "aten::view_as",
    "aten::resolve_conj", "aten::resolve_neg", "aten::to", "aten::type_as", "aten::contiguous",
    "aten::numpy_T", "aten::lift_fresh", "aten::empty", "aten::empty_like",
    "aten::empty_strided", "aten::new_empty", "aten::new_empty_strided", "aten::result_type",
    "aten::size", "aten::stride", "aten::is_nonzero",
])


def _nesting(events):
    """Per event: the time of its direct children, of its nearest nested scopes, whether an op of
    its name holds it, whether an op runs inside it (tabulate_profile's first pass)."""
    n = len(events)
    children, inner_scopes = [0] * n, [0] * n
    in_namesake, calls_ops = [False] * n, [False] * n
    order = sorted(range(n), key=lambda i: (events[i].thread, events[i].start_ns,
                                            -events[i].duration_ns))
    end = [e.start_ns + e.duration_ns for e in events]
    stack, thread = [], 0
    for idx in order:
        e = events[idx]
        if not _is_host(e.kind):
            continue
        if not stack or thread != e.thread:
            stack = []
        thread = e.thread
        # Inside the open event when it starts before that one ends, even when it ends a little
        # after (times rounded to whole microseconds): only the part inside counts against it.
        while stack and end[stack[-1]] <= e.start_ns:
            stack.pop()
        if stack:
            children[stack[-1]] += min(end[idx], end[stack[-1]]) - e.start_ns
        if e.kind == OP:
            for above in stack:
                calls_ops[above] = True
        if e.kind == SCOPE:
            for above in reversed(stack):
                if events[above].kind == SCOPE:
                    inner_scopes[above] += min(end[idx], end[above]) - e.start_ns
                    break
        if e.kind == OP:
            in_namesake[idx] = any(events[a].kind == OP and events[a].name == e.name
                                   for a in stack)
        stack.append(idx)
    return children, inner_scopes, in_namesake, calls_ops


def tabulate_profile(events):
    """ftbench's tabulate_profile: a dict with ops (rows by self time, largest first, ties by
    name), kernels (by total time), scopes (by first start), op_self_ns, kernel_ns, flops,
    leaf_input_bytes, leaf_calls_without_bytes, attention_ops. Rows are dicts."""
    children, inner_scopes, in_namesake, calls_ops = _nesting(events)
    ops, kernels, scopes = {}, {}, {}
    out = {"op_self_ns": 0, "kernel_ns": 0, "flops": 0, "leaf_input_bytes": 0,
           "leaf_calls_without_bytes": 0}
    for i, e in enumerate(events):
        if e.kind == OP:
            row = ops.setdefault(e.name, {"name": e.name, "calls": 0, "self_ns": 0, "total_ns": 0,
                                          "flops": 0, "input_bytes": 0})
            row["calls"] += 1
            row["self_ns"] += e.duration_ns - children[i]
            if not in_namesake[i]:
                row["total_ns"] += e.duration_ns
            row["flops"] += e.flops
            if row["input_bytes"] is not None and e.input_bytes is not None:
                row["input_bytes"] += e.input_bytes
            else:
                row["input_bytes"] = None
            if not calls_ops[i] and e.name not in TOUCHES_NO_DATA:
                if e.input_bytes is not None:
                    out["leaf_input_bytes"] += e.input_bytes
                else:
                    out["leaf_calls_without_bytes"] += 1
        elif e.kind == SCOPE:
            row = scopes.setdefault(e.name, {"name": e.name, "calls": 0, "total_ns": 0,
                                             "self_ns": 0, "first_start": e.start_ns})
            row["first_start"] = min(row["first_start"], e.start_ns)
            row["calls"] += 1
            row["total_ns"] += e.duration_ns
            row["self_ns"] += e.duration_ns - inner_scopes[i]
        else:
            row = kernels.setdefault(e.name, {"name": e.name, "calls": 0, "total_ns": 0})
            row["transfer"] = e.kind == TRANSFER
            row["calls"] += 1
            row["total_ns"] += e.duration_ns
            out["kernel_ns"] += e.duration_ns
    out["op_self_ns"] = sum(r["self_ns"] for r in ops.values())
    out["flops"] = sum(r["flops"] for r in ops.values())
    # ATen's own ops only: autograd's nodes around them name attention too.
    out["attention_ops"] = sorted(n for n in ops
                                  if n.startswith("aten::") and "attention" in n.lower())
    # Python's str order is the code-point order, which is UTF-8's byte order (std::map's).
    out["ops"] = sorted(ops.values(), key=lambda r: (-r["self_ns"], r["name"]))
    out["kernels"] = sorted(kernels.values(), key=lambda r: (-r["total_ns"], r["name"]))
    out["scopes"] = sorted(scopes.values(), key=lambda r: (r["first_start"], r["name"]))
    return out


def csv_field(text):
    if not any(c in text for c in ',"\r\n'):
        return text
    return '"' + text.replace('"', '""') + '"'


def _ms(ns):
    return f"{ns / 1e6:.3f}"


def _per_second(amount, ns, unit):
    if amount <= 0 or ns <= 0:
        return ""
    return f"{amount / (ns / 1e9) / unit:.4g}"


def _share(part, whole):
    return f"{part / whole:.4f}" if whole > 0 else ""


def op_table_csv(tables):
    lines = [OP_HEADER]
    for r in tables["ops"]:
        known = r["input_bytes"] is not None
        lines.append(",".join([
            csv_field(r["name"]), str(r["calls"]), _ms(r["self_ns"]), _ms(r["total_ns"]),
            _share(r["self_ns"], tables["op_self_ns"]), str(r["flops"]),
            _per_second(r["flops"], r["self_ns"], 1e12),
            str(r["input_bytes"]) if known else "",
            _per_second(r["input_bytes"], r["self_ns"], 1e9) if known else ""]))
    return "\n".join(lines) + "\n"


def kernel_table_csv(tables):
    lines = [KERNEL_HEADER]
    for r in tables["kernels"]:
        mean_us = r["total_ns"] / r["calls"] / 1e3 if r["calls"] > 0 else 0.0
        lines.append(",".join([
            csv_field(r["name"]), "transfer" if r["transfer"] else "kernel", str(r["calls"]),
            _ms(r["total_ns"]), _share(r["total_ns"], tables["kernel_ns"]), f"{mean_us:.3f}"]))
    return "\n".join(lines) + "\n"


def short_scope(name):
    return name[len("ftbench::"):] if name.startswith("ftbench::") else name


def _op_record(row):
    return {"name": row["name"], "calls": row["calls"], "self_seconds": row["self_ns"] / 1e9,
            "flops": float(row["flops"])}


def profile_record(tables, window, device_activity, paths):
    """As the `profile` record of ftbench's report (docs/report-schema.md): the window, the
    files, the totals, the scopes, the first 12 ops by self time and the attention ops."""
    by_name = {r["name"]: r for r in tables["ops"]}
    return {
        "first_step": window[0],
        "last_step": window[1],
        **paths,
        "device_activity": device_activity,
        "op_self_seconds": tables["op_self_ns"] / 1e9,
        "kernel_seconds": tables["kernel_ns"] / 1e9,
        "flops": float(tables["flops"]),
        "leaf_input_bytes": tables["leaf_input_bytes"],
        "leaf_calls_without_bytes": tables["leaf_calls_without_bytes"],
        "scopes": [{"name": short_scope(s["name"]), "calls": s["calls"],
                    "seconds": s["total_ns"] / 1e9, "self_seconds": s["self_ns"] / 1e9}
                   for s in tables["scopes"]],
        "top_ops": [_op_record(r) for r in tables["ops"][:12]],
        "attention_ops": [_op_record(by_name[n]) for n in tables["attention_ops"]],
    }
