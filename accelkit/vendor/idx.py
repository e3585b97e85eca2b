"""MNIST's download, made here: the four IDX files a tutorial reads itself (``python -m accelkit.vendor.idx DIR``).

Some tutorials do not ask torchvision for MNIST but read the files that ``wget`` and ``gunzip`` left in a folder
(SambaNova's lenet: ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte``,
``t10k-labels-idx1-ubyte``, from Fashion-MNIST's or MNIST's site). Offline, this writes those four files in the
same IDX format (big-endian magic 2051 / 2049, counts, 28x28 unsigned bytes), holding the handwriting-like
digits ``--synthetic-data`` gives torchvision's MNIST (:mod:`accelkit.vendor.synthetic`: 2,000 training and 500
test samples; the label is the digit), so the tutorial's own reader and its command line run unchanged:

    python -m accelkit.vendor.idx $DATADIR          # in place of the README's wget + gunzip step
"""

from __future__ import annotations

import argparse
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

FILES = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def write_mnist_idx(folder: str | Path) -> list[Path]:
    """Write the four MNIST IDX files into ``folder`` (made if missing); returns their paths."""
    out = Path(folder).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for train, (images_name, labels_name) in FILES.items():
        images, labels = _digits(train)  # the stand-in's arrays, without its announcement (this is not a run)
        n, rows, cols = images.shape
        (out / images_name).write_bytes(struct.pack(">IIII", 2051, n, rows, cols) + images.astype(np.uint8).tobytes())
        (out / labels_name).write_bytes(struct.pack(">II", 2049, n) + labels.astype(np.uint8).tobytes())
        written += [out / images_name, out / labels_name]
    return written


def _digits(train: bool) -> tuple[np.ndarray, np.ndarray]:
    from accelkit.vendor.synthetic import TEST_SAMPLES, TRAIN_SAMPLES, _digit_images

    return _digit_images(TRAIN_SAMPLES if train else TEST_SAMPLES, 0 if train else 1, 28)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m accelkit.vendor.idx",
                                     description="Write MNIST's four IDX files (generated digits) into a folder, in "
                                                 "place of a tutorial's download step.")
    parser.add_argument("folder", help="where the tutorial reads them (its --data-dir)")
    args = parser.parse_args(argv)
    for path in write_mnist_idx(args.folder):
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    print("generated handwriting-like digits (accelkit.data.digits), not MNIST's own images: the label is the digit")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
