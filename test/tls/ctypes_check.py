#!/usr/bin/env python3
"""ctypes_check.py HELPERS LIB - gpuport loaded by Python's ctypes beside libraries whose
TLS is initial-exec (docs/LAUNCH_ABI.md section 3, "Thread-local storage"), as after
`import torch`: each case runs in a fresh python3 process, loads the objects in its order
and calls a few functions of the library (a failing call's message, and where a device
exists the vector-add kernel built into every backend's library, checked element by
element). HELPERS is the directory check.sh built the helper objects in. Exits non-zero
when a case failed."""
import ctypes
import os
import random
import subprocess
import sys

FILLERS = [16 << i for i in range(9)]  # tls_filler_<N>.so, N = 16 .. 4096 bytes


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def exercise(lib):
    """Calls a few functions of the loaded library; raises on a wrong answer."""
    lib.gp_backend_name.restype = ctypes.c_char_p
    lib.gp_last_error_message.restype = ctypes.c_char_p
    name = lib.gp_backend_name().decode()
    st = lib.gp_malloc(None, ctypes.c_size_t(16))
    msg = lib.gp_last_error_message().decode()
    if st == 0 or "gp_malloc" not in msg:
        raise RuntimeError("gp_malloc(NULL) -> %d, message '%s'" % (st, msg))
    n = ctypes.c_int(0)
    if lib.gp_device_count(ctypes.byref(n)) != 0 or n.value < 1:
        print("  %s: no device (%s): kernel not run" % (name, lib.gp_last_error_message().decode()))
        return
    count = 1 << 14
    seed = int(os.environ.get("GP_TEST_SEED", "0"), 0) or random.SystemRandom().getrandbits(63)
    print("  %s: vector add, seed 0x%x (replay with GP_TEST_SEED=0x%x)" % (name, seed, seed))
    rng = random.Random(seed)
    arr = ctypes.c_float * count
    a = arr(*[rng.uniform(-1, 1) for _ in range(count)])
    b = arr(*[rng.uniform(-1, 1) for _ in range(count)])
    c = arr(*[float("nan")] * count)  # an element left unwritten stays NaN
    bytes_ = ctypes.c_size_t(ctypes.sizeof(a))
    dev = [ctypes.c_void_p() for _ in range(3)]
    for d, h in zip(dev, (a, b, c)):
        check(lib, lib.gp_malloc(ctypes.byref(d), bytes_), "gp_malloc")
        check(lib, lib.gp_memcpy(d, h, bytes_), "gp_memcpy")
    kernel = ctypes.c_void_p.in_dll(lib, "gp__kernel_gp__bench_vadd")
    nn = ctypes.c_int(count)
    args = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in (nn, *dev)])
    lib.gp_launch.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]
    check(lib, lib.gp_launch(ctypes.addressof(kernel), Dim3(count // 256, 1, 1), Dim3(256, 1, 1), 0, None, args),
          "gp_launch")
    check(lib, lib.gp_device_synchronize(), "gp_device_synchronize")
    check(lib, lib.gp_memcpy(c, dev[2], bytes_), "gp_memcpy")
    for d in dev:
        lib.gp_free(d)
    for i in range(count):
        want = ctypes.c_float(a[i] + b[i]).value  # the float sum: double rounding is innocuous for +
        if not c[i] == want:
            raise RuntimeError("c[%d] = %r, want %r (seed 0x%x)" % (i, c[i], want, seed))


def check(lib, st, what):
    if st != 0:
        raise RuntimeError("%s -> %d: %s" % (what, st, lib.gp_last_error_message().decode()))


def omp_run(omp):
    threads = ctypes.c_int(0)
    omp.gp_tls_omp_sum.restype = ctypes.c_long
    s = omp.gp_tls_omp_sum(ctypes.c_long(100000), ctypes.byref(threads))
    if s != 100000 * 100001 // 2 or threads.value < 1:
        raise RuntimeError("OpenMP sum %d with %d threads" % (s, threads.value))


def mapped_objects():
    with open("/proc/self/maps") as f:
        return {line.split()[-1] for line in f if ".so" in line.split()[-1]}


def child(mode, helpers, lib, extra):
    """One case, in this (fresh) process."""
    h = lambda name: os.path.join(helpers, name)
    if mode == "deps":  # what loading lib maps besides itself
        before = mapped_objects()
        ctypes.CDLL(lib)
        me = os.path.realpath(lib)
        print("\n".join(sorted(p for p in mapped_objects() - before if os.path.realpath(p) != me)))
        return
    if mode == "fill":  # the dependencies, the reserve, then the fillers that fit
        for d in extra:
            ctypes.CDLL(d)
        ctypes.CDLL(h("tls_reserve.so"))
        fit = []
        for size in reversed(FILLERS):
            try:
                ctypes.CDLL(h("tls_filler_%d.so" % size))
                fit.append(str(size))
            except OSError:
                pass
        print(" ".join(fit))
        return
    if mode == "after-large":  # as after `import torch`: a large initial-exec block first
        ctypes.CDLL(h("tls_filler_1024.so"))
        exercise(ctypes.CDLL(lib))
    elif mode == "before-large":
        g = ctypes.CDLL(lib)
        ctypes.CDLL(h("tls_filler_1024.so"))
        exercise(g)
    elif mode == "after-libgomp":
        omp = ctypes.CDLL(h("tls_omp.so"))
        exercise(ctypes.CDLL(lib))
        omp_run(omp)
    elif mode == "before-libgomp":
        g = ctypes.CDLL(lib)
        omp = ctypes.CDLL(h("tls_omp.so"))
        omp_run(omp)
        exercise(g)
    elif mode == "nearly-full":  # extra: the dependencies, then "--", then the filler sizes
        cut = extra.index("--")
        for d in extra[:cut]:
            ctypes.CDLL(d)
        for size in extra[cut + 1:]:
            ctypes.CDLL(h("tls_filler_%s.so" % size))
        exercise(ctypes.CDLL(lib))
    else:
        raise SystemExit("unknown mode " + mode)


def run(mode, helpers, lib, extra=()):
    r = subprocess.run([sys.executable, __file__, "--child", mode, helpers, lib, *extra],
                       capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
        return 0
    if len(sys.argv) != 3:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    helpers, lib = sys.argv[1], sys.argv[2]
    failed = 0
    rc, out, err = run("deps", helpers, lib)
    if rc != 0:
        print("FAIL %s does not load in a fresh python3: %s" % (lib, err.strip().splitlines()[-1:]))
        return 1
    deps = out.split()
    rc, out, err = run("fill", helpers, lib, deps)
    fill = out.split()
    if rc != 0 or str(FILLERS[-1]) in fill:
        print("FAIL the fill probe: %s" % (err.strip() or "the surplus is larger than the fillers use up"))
        return 1
    cases = [("after-large", ()), ("before-large", ()), ("after-libgomp", ()), ("before-libgomp", ()),
             ("nearly-full", (*deps, "--", *fill))]
    for mode, extra in cases:
        rc, out, err = run(mode, helpers, lib, extra)
        note = " (fillers of %s bytes first)" % "+".join(fill) if mode == "nearly-full" else ""
        print("%s python3 ctypes %s: %s%s" % ("ok  " if rc == 0 else "FAIL", mode, lib, note))
        sys.stdout.write(out)
        if rc != 0:
            failed += 1
            sys.stdout.write(err)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
