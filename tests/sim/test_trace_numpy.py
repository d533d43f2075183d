#!/usr/bin/python3
"""Traces as users make them, read through taot's ReadTrace (via trace_dump): NPY saved by real
numpy (np.save; every accepted integer dtype, 3-D and 4-D, format versions 1.0, 2.0 and 3.0)
and CSV written by Python's csv module (rows shuffled, comments, CRLF); traces taot's WriteTrace
writes, read back by np.load and csv; and the errors numpy-made files that break the rules get.

Usage: test_trace_numpy.py PATH/TO/trace_dump
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

DUMP = None


def run_dump(*args):
    return subprocess.run([DUMP, *args], capture_output=True, text=True, timeout=120)


def dump(*args):
    p = run_dump(*args)
    assert p.returncode == 0, f"trace_dump {args} failed: {p.stderr}"
    return json.loads(p.stdout)


def expect_error(path, *fragments):
    p = run_dump(path)
    assert p.returncode == 1, f"{path}: expected an error, got rc {p.returncode}: {p.stdout[:200]}"
    for f in fragments:
        assert f in p.stderr, f"{path}: error {p.stderr.strip()!r} lacks {f!r}"


def counts(rng, shape, dtype, high=1000):
    return rng.integers(0, high, size=shape).astype(dtype)


def as_4d(a):
    """(S, R, E) -> (S, 1, R, E): the layout trace_dump prints."""
    return a if a.ndim == 4 else a[:, None, :, :]


def check_matches(got, layers):
    """`got` is trace_dump's JSON; `layers` the arrays per layer as numpy saw them."""
    a0 = as_4d(layers[0])
    s, m, r, e = a0.shape
    assert got["shape"] == {"steps": s, "microbatches": m, "layers": len(layers), "ranks": r,
                            "experts": e}, got["shape"]
    for i, a in enumerate(layers):
        np.testing.assert_array_equal(np.array(got["loads"][i], dtype=np.int64),
                                      as_4d(a).astype(np.int64), err_msg=f"layer {i}")


def save_layers(directory, layers, saver=np.save):
    os.makedirs(directory, exist_ok=True)
    for i, a in enumerate(layers):
        saver(os.path.join(directory, f"layer_{i:03d}.npy"), a)


# ---------------------------------------------------------------------------------------------
# NPY written by numpy.

def test_int32_3d(tmp, rng):
    layers = [counts(rng, (5, 4, 16), np.int32) for _ in range(3)]
    save_layers(f"{tmp}/t", layers)
    check_matches(dump(f"{tmp}/t"), layers)


def test_int64_4d(tmp, rng):
    layers = [counts(rng, (3, 2, 4, 8), np.int64, high=2**40 + 1) for _ in range(2)]
    layers[0][0, 0, 0, 0] = 2**40  # the largest count allowed
    save_layers(f"{tmp}/t", layers)
    check_matches(dump(f"{tmp}/t"), layers)


def test_every_integer_dtype(tmp, rng):
    dtypes = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
    layers = [counts(rng, (2, 2, 4), d, high=100) for d in dtypes]
    save_layers(f"{tmp}/t", layers)
    check_matches(dump(f"{tmp}/t"), layers)


def test_format_versions(tmp, rng):
    layers = [counts(rng, (2, 2, 4), np.int64) for _ in range(3)]
    os.makedirs(f"{tmp}/t")
    for i, (a, version) in enumerate(zip(layers, [(1, 0), (2, 0), (3, 0)])):
        with open(f"{tmp}/t/layer_{i:03d}.npy", "wb") as f:
            np.lib.format.write_array(f, a, version=version)
    check_matches(dump(f"{tmp}/t"), layers)


def test_4d_with_one_microbatch_is_3d(tmp, rng):
    a = counts(rng, (3, 1, 2, 4), np.int32)
    save_layers(f"{tmp}/t", [a, a[:, 0]])
    check_matches(dump(f"{tmp}/t"), [a[:, 0], a[:, 0]])


def test_single_file(tmp, rng):
    a = counts(rng, (4, 2, 6), np.int32)
    np.save(f"{tmp}/routing.npy", a)
    check_matches(dump(f"{tmp}/routing.npy"), [a])


# ---------------------------------------------------------------------------------------------
# CSV written by Python's csv module (its default line ending is CRLF).

def write_csv(path, a, rng, comments=True):
    """`a` is (S, R, E) or (S, M, R, E); rows are shuffled."""
    rows = []
    if a.ndim == 3:
        header = ["step", "rank"]
        for s in range(a.shape[0]):
            for r in range(a.shape[1]):
                rows.append([s, r, *a[s, r].tolist()])
    else:
        header = ["step", "microbatch", "rank"]
        for s in range(a.shape[0]):
            for m in range(a.shape[1]):
                for r in range(a.shape[2]):
                    rows.append([s, m, r, *a[s, m, r].tolist()])
    header += [f"e{e}" for e in range(a.shape[-1])]
    rng.shuffle(rows)
    with open(path, "w", newline="") as f:
        if comments:
            f.write("# routing counts from a test\r\n\r\n")
        w = csv.writer(f)
        w.writerow(header)
        for i, row in enumerate(rows):
            w.writerow(row)
            if comments and i == len(rows) // 2:
                f.write("# halfway\r\n")


def test_csv_3d_and_4d(tmp, rng):
    for shape in [(4, 4, 8), (3, 2, 2, 6)]:
        d = f"{tmp}/csv{len(shape)}"
        os.makedirs(d)
        layers = [counts(rng, shape, np.int64) for _ in range(3)]
        for i, a in enumerate(layers):
            write_csv(f"{d}/layer_{i:03d}.csv", a, rng)
        check_matches(dump(d), layers)


# ---------------------------------------------------------------------------------------------
# WriteTrace's files, read by numpy and csv.

def test_write_trace_is_numpy_readable(tmp, rng):
    for shape in [(3, 2, 8), (3, 2, 2, 8)]:
        src = f"{tmp}/src{len(shape)}"
        layers = [counts(rng, shape, np.int32) for _ in range(2)]
        save_layers(src, layers)
        out = f"{tmp}/out{len(shape)}"
        dump(src, "--write", out, "npy")
        for i, a in enumerate(layers):
            back = np.load(f"{out}/layer_{i:03d}.npy")
            assert back.dtype == np.dtype("<i8"), back.dtype
            expected = a if a.ndim == 3 else a  # (S, R, E) when M == 1, else (S, M, R, E)
            assert back.shape == expected.shape, (back.shape, expected.shape)
            np.testing.assert_array_equal(back, expected)
        with open(f"{out}/layer_000.npy", "rb") as f:
            f.read(8)
            header_len = int.from_bytes(f.read(2), "little")
            assert (10 + header_len) % 64 == 0, header_len  # np.save's alignment

        csv_out = f"{tmp}/csvout{len(shape)}"
        dump(src, "--write", csv_out, "csv")
        with open(f"{csv_out}/layer_001.csv", newline="") as f:
            rows = list(csv.reader(f))
        idx = 2 if len(shape) == 3 else 3
        assert rows[0][:idx] == (["step", "rank"] if idx == 2 else ["step", "microbatch", "rank"])
        back = np.array([[int(x) for x in row[idx:]] for row in rows[1:]]).reshape(shape)
        np.testing.assert_array_equal(back, layers[1])
        # and WriteTrace refuses to write over them
        p = run_dump(src, "--write", csv_out, "csv")
        assert p.returncode == 1 and "layer_000.csv already exists" in p.stderr, p.stderr


# ---------------------------------------------------------------------------------------------
# numpy-made files that break the rules.

def test_errors(tmp, rng):
    good = counts(rng, (2, 2, 4), np.int32)

    def one(name, a, *fragments, saver=np.save):
        d = f"{tmp}/{name}"
        save_layers(d, [a], saver)
        expect_error(d, f"{d}/layer_000.npy", *fragments)

    one("f4", good.astype(np.float32), "dtype '<f4' is not an integer type (use int32/int64)")
    one("f8", good.astype(np.float64), "dtype '<f8' is not an integer type")
    one("bool", good > 3, "dtype '|b1' is not an integer type")
    one("big", good.astype(">i4"), "dtype '>i4' is big-endian")
    one("fortran", np.asfortranarray(good), "fortran_order is True")
    one("two_d", good[0], "shape (2, 4) must be (steps, ranks, experts)")
    one("five_d", good.reshape(1, 2, 1, 2, 4), "shape (1, 2, 1, 2, 4) must be")
    one("empty", good[:0], "steps must be in [1,")
    neg = good.copy()
    neg[1, 0, 3] = -7
    one("negative", neg, "element [1, 0, 3]", "got -7")
    huge = good.astype(np.uint64)
    huge[0, 1, 2] = 2**40 + 1
    one("huge", huge, "element [0, 1, 2]", f"got {2**40 + 1}")
    one("experts", counts(rng, (2, 3, 4), np.int32), "4 experts is not a multiple of 3 ranks")

    def structured(path, a):
        np.save(path, np.zeros(3, dtype=[("a", "<i4")]))
    one("structured", good, "structured dtype", saver=structured)

    d = f"{tmp}/truncated"
    save_layers(d, [good])
    with open(f"{d}/layer_000.npy", "r+b") as f:
        f.truncate(os.path.getsize(f"{d}/layer_000.npy") - 5)
    expect_error(d, f"{d}/layer_000.npy", "truncated", "needs 64 data bytes, the file holds 59")

    d = f"{tmp}/mismatch"
    save_layers(d, [good, counts(rng, (3, 2, 4), np.int64)])
    expect_error(d, f"{d}/layer_001.npy: shape (3, 2, 4) differs from layer_000.npy's (2, 2, 4)")


TESTS = [v for k, v in sorted(globals().items()) if k.startswith("test_")]


def main():
    global DUMP
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    DUMP = sys.argv[1]
    failed = 0
    for test in TESTS:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                test(tmp, np.random.default_rng(7))
                print(f"ok   {test.__name__}")
            except AssertionError as e:
                failed += 1
                print(f"FAIL {test.__name__}: {e}")
    print(f"{len(TESTS) - failed}/{len(TESTS)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
